"""WhatsApp's part of setup and doctor: the phone number id and secrets (setup), the Graph API and webhook
handshake tried (probe), the doctor's lines (doctor)."""
