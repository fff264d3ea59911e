// The Chat page: the history, the owner's messages, the answer streaming in (server-sent events) and the
// Yes / No buttons of a question. No library; text is set as text (never as HTML).
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf"]').content;
  const list = document.getElementById("messages");
  const live = document.getElementById("live");
  const status = document.getElementById("status");
  const form = document.getElementById("composer");
  const input = document.getElementById("text");
  const shown = new Set();

  function post(path, body) {
    return fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-XSRFToken": csrf },
      body: JSON.stringify(body),
    }).then(async (answer) => {
      if (!answer.ok) {
        const error = await answer.json().catch(() => ({}));
        throw new Error(error.error || answer.statusText);
      }
      return answer.json();
    });
  }

  // A direction control (U+202A-U+202E, U+2066-U+2069) is shown as its mark, ‹U+202E›: a mail quoted in an answer
  // cannot make "invoice_<U+202E>fdp.exe" read "invoice_exe.pdf". So is a mark (LRM, RLM, ALM) with no letter of its
  // direction within 32 characters on its line ("pay <U+200F>100 200 300" read "pay 300 200 100"); Hebrew and Arabic
  // keep theirs. The rule of assistant_framework/direction.py (which says why), for the page's own text.
  const MARKS = "\u200e\u200f\u061c";
  const RIGHT_TO_LEFT = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff\u{10800}-\u{10fff}\u{1e800}-\u{1efff}]/u;
  const LINE_END = /[\n\r\x1c-\x1e\x85\u2028\u2029]/;
  const mark = (c) => "‹U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "›";

  function letterDirection(chars) {  // of the first letter in chars before a line end: true for right to left
    for (const c of chars) {
      if (LINE_END.test(c)) return null;
      if (/\p{L}/u.test(c)) return RIGHT_TO_LEFT.test(c);
    }
    return null;
  }

  function marked(text) {
    text = String(text);
    const count = Array.from(text).filter((c) => MARKS.includes(c)).length;
    const dense = count > 8 && count * 16 > text.length;  // a text made of marks: each shown
    return text.replace(/[\u202a-\u202e\u2066-\u2069]|[\u200e\u200f\u061c]+/g, (run, at) => {
      if (!MARKS.includes(run[0])) return mark(run);
      const end = at + run.length;
      const beside = dense ? [] : [
        letterDirection(Array.from(text.slice(Math.max(0, at - 32), at)).reverse()),
        letterDirection(text.slice(end, end + 32)),
      ];
      return Array.from(run, (c) => (beside.includes(c !== "\u200e") ? c : mark(c))).join("");
    });
  }

  function add(message) {
    if (shown.has(message.id)) return;
    shown.add(message.id);
    const item = document.createElement("li");
    item.className = message.role;
    item.dataset.id = message.id;
    item.textContent = marked(message.text);
    if (message.file) {
      const href = "/chat/file/" + message.id;
      if (message.file.photo) {
        const picture = document.createElement("img");
        picture.src = href;
        picture.alt = message.file.name;
        item.appendChild(picture);
      } else {
        const link = document.createElement("a");
        link.className = "file";
        link.href = href;
        link.textContent = "⬇ " + message.file.name;
        item.appendChild(link);
      }
    }
    list.appendChild(item);
    item.scrollIntoView({ block: "end" });
  }

  function ask(id, text) {
    if (document.getElementById("ask-" + id)) return;
    const item = document.createElement("li");
    item.className = "ask";
    item.id = "ask-" + id;
    item.textContent = marked(text);
    const buttons = document.createElement("div");
    for (const [label, yes] of [["Yes", true], ["No", false]]) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      button.addEventListener("click", () => {
        buttons.querySelectorAll("button").forEach((b) => (b.disabled = true));
        post("/chat/answer", { id: id, yes: yes }).catch((error) => (status.textContent = error.message));
      });
      buttons.appendChild(button);
    }
    item.appendChild(buttons);
    list.appendChild(item);
    item.scrollIntoView({ block: "end" });
  }

  function showLive(text) {
    live.hidden = !text;
    live.textContent = marked(text);
  }

  function handle(event) {
    if (event.type === "message") {
      add(event.message);
      if (event.message.role === "assistant") showLive("");
      status.textContent = "";
    } else if (event.type === "live") {
      showLive(event.text);
    } else if (event.type === "typing") {
      status.textContent = "writing…";
    } else if (event.type === "ask") {
      ask(event.id, event.text);
    } else if (event.type === "asked") {
      const item = document.getElementById("ask-" + event.id);
      if (item) item.remove();
    }
  }

  function load() {
    return fetch("/chat/history", { credentials: "same-origin" })
      .then((answer) => answer.json())
      .then((history) => {
        (history.messages || []).forEach(add);
        (history.asking || []).forEach((q) => ask(q.id, q.text));
        showLive(history.live || "");
      });
  }

  function listen() {
    const stream = new EventSource("/chat/events");
    stream.onmessage = (message) => handle(JSON.parse(message.data));
    stream.onopen = () => load().catch(() => {});
    stream.onerror = () => (status.textContent = "reconnecting…");
  }

  function newId() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  form.addEventListener("submit", (submit) => {
    submit.preventDefault();
    const text = input.value;
    if (!text.trim()) return;
    input.disabled = true;
    post("/chat/send", { id: newId(), text: text })
      .then((answer) => {
        if (answer.message) add(answer.message);
        input.value = "";
      })
      .catch((error) => (status.textContent = error.message))
      .finally(() => {
        input.disabled = false;
        input.focus();
      });
  });
  const picker = document.getElementById("file");
  picker.addEventListener("change", () => {
    const file = picker.files[0];
    if (!file) return;
    const query = new URLSearchParams({ id: newId(), name: file.name, text: input.value });
    picker.disabled = true;
    fetch("/chat/upload?" + query, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": file.type || "application/octet-stream", "X-XSRFToken": csrf },
      body: file,
    })
      .then(async (answer) => {
        const body = await answer.json().catch(() => ({}));
        if (!answer.ok) throw new Error(body.error || answer.statusText);
        if (body.message) add(body.message);
        input.value = "";
      })
      .catch((error) => (status.textContent = error.message))
      .finally(() => {
        picker.value = "";
        picker.disabled = false;
      });
  });
  input.addEventListener("keydown", (key) => {
    if (key.key === "Enter" && !key.shiftKey) {
      key.preventDefault();
      form.requestSubmit();
    }
  });
  listen();
})();
