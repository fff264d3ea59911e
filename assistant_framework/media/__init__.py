"""Media files users send and the bot sends back: photos prepared for a vision model, speech made fit
for a voice note. Pure functions on bytes: no chat, no model HTTP (those are the bot's)."""
