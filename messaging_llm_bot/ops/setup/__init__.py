"""``assistant setup``: the first run, as plain prompts; every answer can also be given as a flag.

Steps: Telegram token (checked with getMe), the owner's user id (read with getUpdates after the
owner writes to the bot), the model server (the usual local ports probed, models listed), the time
zone, a short test turn. Each answer is checked when it is given (at a terminal a wrong one is asked
again). Nothing is written until the test turn passed (or ``--no-test``); then the answers go to the
git-ignored ``config/local/`` layer, and every value setup did not ask about stays as it was. The
values already there are offered as the answers' defaults (``answers.Current``).

The run and its order (wizard: ``Wizard``), what every step shares: asking and saying (dialog), the
answers and their checks (answers), the Telegram steps (telegram), the model server's steps and the
test turn (model).
"""
