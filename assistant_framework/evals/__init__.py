"""The skill-calling eval: can a model drive the assistant? See docs/eval.md."""
