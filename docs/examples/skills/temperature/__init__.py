from assistant_framework.skills import SkillArgs, SkillContext
from assistant_framework.workspace import Workspace

DESCRIPTION = "Convert a temperature between Celsius and Fahrenheit."
ARGS_SCHEMA = {
    "type": "object",
    "properties": {"value": {"type": "number"}, "to": {"enum": ["C", "F"]}},
    "required": ["value", "to"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> float:
    v = float(args["value"])
    return round(v * 9 / 5 + 32, 1) if args["to"] == "F" else round((v - 32) * 5 / 9, 1)
