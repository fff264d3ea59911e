"""Slack's part of setup and doctor: the owner and the app's tokens (setup), the Web API and request URL tried
(probe), the doctor's lines (doctor)."""
