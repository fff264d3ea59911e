"""Skills in the Agent Skills format (agentskills.io): a folder with a ``SKILL.md``, read by the model.

- ``format``: one ``SKILL.md`` read and checked into an ``AgentSkill`` (front matter and body).
- ``library``: the folders found in the skills dirs and the workspace's ``.agents/skills/``; the body
  and referenced files, each bounded; rescanned when a folder changed.
- ``tools``: the two skills the model calls for them, ``skill_doc`` and ``run_script``.
- ``scripts``: one script run: allowed interpreter, no shell, time limit, bounded output, no secrets.

Nothing here imports the skill manager at module level: the manager imports ``library``.
"""
