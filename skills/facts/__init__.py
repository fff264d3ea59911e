"""Built-in skill: structured facts (subject, attribute, value) with history."""

from __future__ import annotations

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import context_untrusted, need
from assistant_framework.stores import FACTS_FILE, FactStore
from assistant_framework.stores.provenance import is_untrusted, shown
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Facts about people and things as subject/attribute/value (Ben/shoe size/44): add, look up, list, forget one by id."
)
CAPABILITIES = ["read", "write", "delete"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "lookup", "list", "forget"]},
        "id": {"type": "string"},
        "subject": {"type": "string"},
        "attribute": {"type": "string"},
        "value": {"type": "string"},
        "query": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    store = FactStore(workspace)
    if args["action"] == "add":
        need(args, "add", "subject", "attribute", "value")
        ref = (context.conversation_id if context is not None else "") or None
        # In a turn with outside content the fact may be that content's words: stored marked.
        untrusted = context_untrusted(context)
        fact, action = store.add(
            args["subject"], args["attribute"], args["value"], source="skill", source_ref=ref, untrusted=untrusted
        )
        what = f"{fact['subject']} / {fact['attribute']} = {fact['value']}"
        if action == "duplicate":
            return f"already known ({fact['id']}): {what}"
        marked = ", marked as outside content" if fact.get("untrusted") else ""
        return f"{action} fact {fact['id']}: {what} (saved to {FACTS_FILE}{marked})"
    if args["action"] == "forget":
        need(args, "forget", "id")
        try:
            removed = store.forget(args["id"])
        except KeyError as exc:
            raise ValueError(f"{exc.args[0]}; list or lookup the facts to see their ids") from None
        first = next(r for r in removed if str(r.get("id")) == str(args["id"]))
        older = f" and {len(removed) - 1} older value(s)" if len(removed) > 1 else ""
        forgotten = f"{first['subject']} / {first['attribute']} = {first['value']}"
        return f"forgot fact {args['id']}: {forgotten}{older} (removed from {FACTS_FILE})"
    if args["action"] == "list":
        found = store.lookup(args.get("subject"))
    else:
        found = store.lookup(args.get("subject"), args.get("attribute"), args.get("query"))
    keys = ("id", "subject", "attribute", "value", "time")
    # A marked fact shows "untrusted": true first: a long result cut at the limit keeps the mark with the value.
    facts = [
        shown({**{key: fact.get(key) for key in keys}, **({"untrusted": True} if is_untrusted(fact) else {})})
        for fact in found
    ]
    return facts or ("no facts stored" if args["action"] == "list" else "no matching facts")
