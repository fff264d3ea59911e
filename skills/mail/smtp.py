"""Sending one message through the owner's SMTP server; every failure is a ValueError in one sentence."""

from __future__ import annotations

import os
import smtplib
import ssl
from email.message import EmailMessage

from assistant_framework.config.settings.mail import SmtpSettings

NOT_SET_UP = "mail is not set up: the owner sets mail.from and mail.smtp.host in the config (docs/actions.md)"


def password(settings: SmtpSettings) -> str:
    """``mail.smtp.password``, else the environment variable ``mail.smtp.password_env`` names."""
    if settings.password:
        return settings.password
    return os.environ.get(settings.password_env, "") if settings.password_env else ""


def send(settings: SmtpSettings, message: EmailMessage) -> None:
    """Send ``message`` to its To/Cc; ValueError when the server refuses it or cannot be reached."""
    timeout = settings.timeout_seconds
    try:
        if settings.security == "ssl":
            server: smtplib.SMTP = smtplib.SMTP_SSL(
                settings.host, settings.port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            server = smtplib.SMTP(settings.host, settings.port, timeout=timeout)
        with server:
            if settings.security == "starttls":
                server.starttls(context=ssl.create_default_context())
            if settings.user:
                server.login(settings.user, password(settings))
            server.send_message(message)
    except smtplib.SMTPAuthenticationError:
        raise ValueError("the SMTP server refused the login (mail.smtp.user and its password)") from None
    except smtplib.SMTPRecipientsRefused:
        raise ValueError("the SMTP server refused the recipients; nothing was sent") from None
    except (smtplib.SMTPException, OSError) as exc:
        raise ValueError(f"the mail could not be sent: the SMTP server failed ({type(exc).__name__})") from None
