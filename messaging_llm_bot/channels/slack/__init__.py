"""The Slack channel: the Events API over HTTP in, the Web API out (docs/slack.md)."""
