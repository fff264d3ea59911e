"""Mutations of pictures, voice, documents and files out (assistant_framework/media/)."""

from __future__ import annotations

from mutation_list.common import AF, IMAGES, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    # -- images for the model (media/images.py) ---------------------------------------------------------
    Mutation(
        "image-pixel-bound-as-before",
        f"{AF}/media/images.py",
        "MAX_IMAGE_PIXELS = 50_000_000",
        "MAX_IMAGE_PIXELS = 200_000_000",
        "a 0.5 MB PNG of 13300x13300 (177 MP) is decoded: 1.4 GB of the bot's memory",
        IMAGES,
    ),
    Mutation(
        "image-pixel-bound-one-format",
        f"{AF}/media/images.py",
        "if width * height > MAX_IMAGE_PIXELS:",
        'if opened.format == "PNG" and width * height > MAX_IMAGE_PIXELS:',
        "a GIF (WebP, JPEG) of any canvas is decoded whole: a 40-byte GIF fills 177 MP",
        IMAGES,
    ),
    Mutation(
        "image-byte-bound-gone",
        f"{AF}/media/images.py",
        "if size <= MAX_IMAGE_BYTES:",
        "if True:",
        "an image file of any size is read and decoded",
        IMAGES,
    ),
    Mutation(
        "image-byte-bound-only-past-the-pixels",
        f"{AF}/media/images.py",
        "if size <= MAX_IMAGE_BYTES:",
        "if size <= 4 * MAX_IMAGE_BYTES:",
        "a file between the byte bound and what the pixel bound catches is read and decoded",
        IMAGES,
    ),
    Mutation(
        "image-decodes-at-once",
        f"{AF}/media/images.py",
        "with _DECODING, warnings.catch_warnings():",
        "with threading.Lock(), warnings.catch_warnings():",
        "images of several chats are decoded at once: their peaks add up",
        IMAGES,
    ),
    Mutation(
        "image-metadata-crosses",
        f"{AF}/media/images.py",
        "return Image.frombytes(image.mode, image.size, image.tobytes())",
        "return image",
        "a JPEG comment, PNG text chunk or colour profile reaches the model",
        IMAGES,
    ),
    # -- documents sent in a chat (assistant_framework/media/documents.py, issue 44) ----------------------------
    Mutation(
        "documents-size-unbounded",
        "assistant_framework/media/documents.py",
        "    if size > limits.max_bytes:",
        "    if False:",
        "a document of any size is read (a 60 MB file on Signal)",
        ("test_documents.py",),
    ),
    Mutation(
        "html-unfinished-rest-read",
        f"{AF}/html_text.py",
        '    if parser.rawdata.startswith("<"):',
        "    if False:",
        "a page, mail or HTML file ending in 200 KB of an unfinished tag takes a minute of CPU on Python 3.11",
        ("test_web_skill_pages.py", "test_documents.py"),
    ),
    Mutation(
        "documents-time-unbounded",
        "assistant_framework/media/documents.py",
        "            timeout=limits.timeout_seconds,",
        "            timeout=None,",
        "a PDF that makes the reader loop holds a worker thread and a process forever",
        ("test_documents.py",),
    ),
    Mutation(
        "documents-text-unmarked",
        "assistant_framework/media/documents.py",
        "    before = UNTRUSTED_FRONT_MATTER + title",
        "    before = title",
        "a document's saved text is read back and recalled as the owner's own words",
        ("test_documents.py",),
    ),
    Mutation(
        "documents-no-text-layer",
        "assistant_framework/media/document_text.py",
        '    if not any(line.strip() and not line.startswith("[page ") for line in body.splitlines()):',
        "    if False:",
        "a scanned PDF goes to the model as page markers, as if it had been read",
        ("test_documents.py",),
    ),
    Mutation(
        "documents-pages-unbounded",
        "assistant_framework/media/document_text.py",
        "        for number in range(min(pages, max_pages)):",
        "        for number in range(pages):",
        "every page of a PDF of any length is read",
        ("test_documents.py",),
    ),
    # -- files out: the send_file skill (assistant_framework/media/files_out.py, issue 44) ------------------------
    Mutation(
        "files-out-sent-twice",
        "assistant_framework/media/files_out.py",
        "        return ledger.once(self._run, _file_action(one, digest), deliver, said)",
        "        return deliver()[0]",
        "a turn run again after a crash right after the send sends the file a second time",
        ("test_files_out.py",),
    ),
    Mutation(
        "files-out-replay-by-caption",
        "assistant_framework/media/files_out.py",
        '    return Action("file", f"{one.rel}:{digest}", one.caption,',
        '    return Action("file", f"{one.rel}:{digest}:{one.caption}", one.caption,',
        "the turn replayed after a kill sends the same file with another caption, and the chat gets it twice",
        ("test_once_replay.py", "test_files_out.py"),
    ),
    Mutation(
        "files-out-state-sent",
        "assistant_framework/media/files_out.py",
        'NEVER_SENT = ("state",)',
        "NEVER_SENT: tuple[str, ...] = ()",
        "the model sends the web page's token or the webhook secret from state/ to the chat",
        ("test_files_out.py",),
    ),
    Mutation(
        "files-out-unbounded",
        "assistant_framework/media/files_out.py",
        "        if info.st_size > self.max_bytes:",
        "        if False:",
        "a file over the platform's limit is uploaded (and fails after a long upload)",
        ("test_files_out.py",),
    ),
)
