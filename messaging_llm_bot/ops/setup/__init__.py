"""``assistant setup``: the first run, as plain prompts; every answer can also be given as a flag.

Steps: each chat channel's (its ``ops/channels/<name>/setup.py``, found by the registry: ops/channels/setup.py;
Telegram's asks for the token and reads the owner's id from a message to the bot), the model server (the usual
local ports probed, models listed), the time zone, a short test turn. Each answer is checked when it is given (at
a terminal a wrong one is asked again). Nothing is written until the test turn passed (or ``--no-test``); then
the answers go to the git-ignored ``config/local/`` layer, and every value setup did not ask about stays as it
was. The values already there are offered as the answers' defaults (``answers.Current``).

The run and its order, the channels' flags (wizard: ``Wizard``), what the wizard's steps share (dialog), the
answers and their checks (answers), the model server's steps and the test turn (model).
"""
