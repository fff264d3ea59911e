"""The email channel's part of setup and doctor: the address and mail servers (setup), the doctor's lines
(doctor)."""
