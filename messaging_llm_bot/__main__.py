"""``python -m messaging_llm_bot [--config config] [--workspace workspace] [--frontend ...]``: ``assistant run``."""

from messaging_llm_bot.cli.run import run_and_exit

if __name__ == "__main__":
    run_and_exit()
