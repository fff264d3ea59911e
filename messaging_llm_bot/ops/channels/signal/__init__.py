"""Signal's part of the doctor: signal-cli's daemon reached and the account registered (doctor)."""
