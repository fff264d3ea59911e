"""The model client: OpenAI-compatible Chat Completions over ``requests``, runners and fallback,
streaming, errors, usage, and the embeddings and transcription clients."""
