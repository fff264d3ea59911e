"""Sending one message through the owner's SMTP server; every failure is a ValueError in one sentence."""

from __future__ import annotations

import os
import smtplib
import ssl
from email.message import EmailMessage

from assistant_framework.config.settings.mail import SmtpSettings
from assistant_framework.tls import certificate_refused, system_context

NOT_SET_UP = "mail is not set up: the owner sets mail.from and mail.smtp.host in the config (docs/actions.md)"


def password(settings: SmtpSettings) -> str:
    """``mail.smtp.password``, else the environment variable ``mail.smtp.password_env`` names."""
    if settings.password:
        return settings.password
    return os.environ.get(settings.password_env, "") if settings.password_env else ""


def send(settings: SmtpSettings, message: EmailMessage) -> None:
    """Send ``message`` to its To/Cc; ValueError when the server refuses it or cannot be reached."""
    timeout = settings.timeout_seconds
    context = _trust(settings) if settings.security != "none" else None
    try:
        if context is not None and settings.security == "ssl":
            server: smtplib.SMTP = smtplib.SMTP_SSL(settings.host, settings.port, timeout=timeout, context=context)
        else:
            server = smtplib.SMTP(settings.host, settings.port, timeout=timeout)
        with server:
            if context is not None and settings.security == "starttls":
                server.starttls(context=context)
            if settings.user:
                server.login(settings.user, password(settings))
            server.send_message(message)
    except smtplib.SMTPAuthenticationError:
        raise ValueError("the SMTP server refused the login (mail.smtp.user and its password)") from None
    except smtplib.SMTPRecipientsRefused:
        raise ValueError("the SMTP server refused the recipients; nothing was sent") from None
    except ssl.SSLCertVerificationError as err:
        raise ValueError(f"the mail could not be sent: {certificate_refused(err, 'mail.smtp')}") from None
    except (smtplib.SMTPException, OSError) as exc:
        raise ValueError(f"the mail could not be sent: the SMTP server failed ({type(exc).__name__})") from None


def _trust(settings: SmtpSettings) -> ssl.SSLContext:
    """The process's TLS context for the server's trust setting (assistant_framework/tls.py)."""
    try:
        return system_context(settings.ca_file)
    except OSError:
        raise ValueError(f"mail.smtp.ca_file {settings.ca_file!r} cannot be read as CA certificates (PEM)") from None
