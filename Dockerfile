# The assistant in a container: slim Python, a non-root user, config/ and workspace/ as volumes.
# Build and run with Ollama beside it: `docker compose up -d` (compose.yaml; docs/deploy.md).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --user-group assistant
WORKDIR /app

# The built-in skills and collectors are found beside the packages: an editable install keeps them there.
COPY pyproject.toml README.md LICENSE ./
COPY assistant_framework ./assistant_framework
COPY messaging_llm_bot ./messaging_llm_bot
COPY skills ./skills
COPY collectors ./collectors
COPY config ./config
RUN pip install -e . \
    && mkdir -p /app/workspace /app/config/local \
    && chown -R assistant:assistant /app/workspace /app/config

USER assistant
VOLUME ["/app/config", "/app/workspace"]

HEALTHCHECK --interval=60s --timeout=30s --start-period=60s --retries=3 \
    CMD ["assistant", "doctor", "--quick", "--config", "/app/config", "--workspace", "/app/workspace"]

CMD ["assistant", "run", "--config", "/app/config", "--workspace", "/app/workspace", "--frontend", "telegram"]
