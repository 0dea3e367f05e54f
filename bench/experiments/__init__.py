"""One-off studies that answered a design question; README.md says what each answered and where the answer is."""
