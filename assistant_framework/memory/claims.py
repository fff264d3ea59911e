def check_memory_claim(reply: str, wrote_memory: bool) -> str | None:
    return None
