"""The other pages (sign-in, conversations, traces, collectors, reminders, usage, skills), each also JSON under
``/api/...`` (the same handler with ``api=True``); the memory's pages are in ``memory_pages``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import urlencode

import tornado.web

from ..collectors.outcome import outcome_dict
from . import charts, views, window
from .auth import COOKIE_NAME
from .base import BaseHandler, WebState
from .memory_pages import anchor
from .parts import collector_runner


class LoginHandler(BaseHandler):
    public = True

    def get(self) -> None:
        self.page("login.html", title="Sign in", failed=False)

    def post(self) -> None:
        if not self.token_ok(self.get_body_argument("token", "").strip()):
            self.set_status(401)
            self.page("login.html", title="Sign in", failed=True)
            return
        self.sign_in()
        self.redirect("/memory")


class LogoutHandler(BaseHandler):
    def post(self) -> None:
        # Off the server's list first: a copy of this cookie elsewhere stops counting too.
        if self.state.sessions is not None:
            self.state.sessions.remove(self.session_id())
        self.clear_cookie(COOKIE_NAME, path="/")
        self.redirect("/login")


class HomeHandler(BaseHandler):
    def get(self) -> None:
        self.redirect("/memory")


class ConversationsHandler(BaseHandler):
    async def get(self) -> None:
        chats = await self.off_loop("files", views.conversations, self.parts.workspace)
        if self.api:
            self.send_json({"conversations": chats})
            return
        self.page("conversations.html", title="Conversations", chats=self.entries(chats))


class ConversationDayHandler(BaseHandler):
    async def get(self, chat: str, day: str) -> None:
        workspace, traces = self.parts.workspace, self.state.traces
        try:
            turns = await self.off_loop("files", views.conversation_day, workspace, chat, day, traces)
        except KeyError:
            raise tornado.web.HTTPError(404, "no such conversation day") from None
        if self.api:
            self.send_json({"conversation": chat, "day": day, "turns": turns})
            return
        chats = await self.off_loop("files", views.conversations, workspace)
        days: list[str] = next((c["days"] for c in chats if c["id"] == chat), [])
        shown = window.window(turns, self.int_argument("from", 0, 0, 10**9), window.TURNS)
        self.page(
            "conversation.html",
            title=f"{chat} {day}",
            chat=chat,
            day=day,
            turns=shown,
            days=days,
            anchor=anchor,
            cut=lambda text: window.cut(text, window.TURN_CHARS),
        )


class TracesHandler(BaseHandler):
    async def get(self) -> None:
        limit = self.int_argument("limit", 50, 1, 1000)
        rows = await self.off_loop("files", views.trace_list, self.state.traces, limit)
        if self.api:
            self.send_json({"traces": rows})
            return
        self.page("traces.html", title="Traces", rows=rows)


class TraceHandler(BaseHandler):
    async def get(self, trace_id: str) -> None:
        try:
            trace = await self.off_loop("files", self.state.traces.load, trace_id)
        except (KeyError, ValueError):
            raise tornado.web.HTTPError(404, "no such trace") from None
        if self.api:
            self.send_json(trace)
            return
        sections = views.section_rows(trace)
        chart = charts.hbar_chart(sections, unit="chars", title="prompt sections (characters)")
        self.page(
            "trace.html",
            title=f"Trace {trace_id}",
            trace=trace,
            recalled=views.labelled_hits(trace.get("recalled") or []),
            sections=sections,
            chart=chart,
            pretty=lambda v: json.dumps(v, ensure_ascii=False, indent=2),
        )


class CollectorsHandler(BaseHandler):
    async def get(self) -> None:
        if self.api:
            self.send_json({"collectors": (await self.off_loop("files", views.collector_rows, self.parts)).rows})
            return
        asked = self.int_argument("from", 0, 0, 10**9)
        rows = await self.off_loop("files", views.collector_rows, self.parts, asked, window.ENTRIES)
        self.page(
            "collectors.html",
            title="Collectors",
            rows=rows,
            ran=self.get_query_argument("ran", ""),
            outcome=self.get_query_argument("outcome", ""),
        )


class CollectorRunHandler(BaseHandler):
    async def post(self, name: str) -> None:
        start = self.int_argument("from", 0, 0, 10**9)  # the page the button was on (its form's address)
        shown = {"from": start} if start else {}
        runner = collector_runner(self.parts)
        if runner is None:
            raise tornado.web.HTTPError(404, "no collectors are loaded")
        try:
            runner.manager.get(name)
        except KeyError:
            raise tornado.web.HTTPError(404, "no such collector") from None
        # The run blocks (up to the collector's timeout): in its own lane, off the page's event loop.
        outcome = await self.off_loop("runs", runner.run_once, name)
        if self.api:
            self.send_json(outcome_dict(outcome))
        else:
            self.redirect("/collectors?" + urlencode({**shown, "ran": name, "outcome": outcome.outcome}))


class UsageHandler(BaseHandler):
    async def get(self) -> None:
        data = await self.off_loop(
            "files", views.usage, self.state.traces, 30, datetime.now(UTC), self.state.parts.settings
        )
        if self.api:
            self.send_json(data)
            return
        days = list(data["by_day"])
        rows = list(data["by_day"].values())
        token_chart = charts.column_chart(
            days,
            [
                ("prompt (not cached)", [max(0, r["prompt_tokens"] - r["cached_tokens"]) for r in rows]),
                ("cached", [r["cached_tokens"] for r in rows]),
                ("completion", [r["completion_tokens"] for r in rows]),
            ],
            title="tokens per day",
            unit="tokens",
        )
        time_chart = charts.column_chart(
            days, [("model time", [round(r["model_s"], 1) for r in rows])], title="model seconds per day", unit="s"
        )
        model_chart = charts.hbar_chart(
            [(m, r["prompt_tokens"] + r["completion_tokens"]) for m, r in data["by_model"].items()],
            unit="tokens",
            title="tokens per model",
        )
        self.page(
            "usage.html",
            title="Usage",
            data=data,
            token_chart=token_chart,
            time_chart=time_chart,
            model_chart=model_chart,
            token_legend=charts.legend(["prompt (not cached)", "cached", "completion"]),
        )


class RemindersHandler(BaseHandler):
    async def get(self) -> None:
        data = await self.off_loop("files", views.reminder_rows, self.parts.workspace)
        if self.api:
            self.send_json(data)
            return
        self.page("reminders.html", title="Reminders", data=data, pending=self.entries(data["pending"]))


class SkillsHandler(BaseHandler):
    async def get(self) -> None:
        data = await self.off_loop("files", views.skill_rows, self.parts)
        if self.api:
            self.send_json(data)
            return
        self.page(
            "skills.html",
            title="Skills",
            skills=self.entries(data["skills"]),
            errors=self.entries(data["errors"], "errors_from"),
            pretty=lambda v: json.dumps(v, ensure_ascii=False, indent=2),
        )


class StaticHandler(tornado.web.StaticFileHandler):
    """The stylesheet, with the same security headers (served without the token: it holds no data)."""

    def initialize(self, path: str, state: WebState) -> None:  # type: ignore[override]
        super().initialize(path)
        self.state = state

    def set_default_headers(self) -> None:
        BaseHandler.set_default_headers(self)  # type: ignore[arg-type]


class NotFoundHandler(BaseHandler):
    """Unknown addresses: 401 without the token (nothing is revealed), else 404."""

    def prepare(self) -> None:
        super().prepare()
        if not self._finished:
            raise tornado.web.HTTPError(404, "no such page")
