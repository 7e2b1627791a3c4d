//! Shared helpers for the end-to-end tests live in `tests/tests`.
