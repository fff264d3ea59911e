"""The email channel: a mailbox the assistant reads over IMAP and answers from over SMTP (docs/email.md)."""
