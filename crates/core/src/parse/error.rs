//! The parsers' nom error type and the small combinators every sub-parser shares.
//!
//! Errors carry the remaining input, so the caller computes line:col from it (askama style).
//! Once a construct is recognised, failures are `cut` into `nom::Err::Failure` so the message
//! names what was expected there instead of a backtracked alternative.

use std::borrow::Cow;

use nom::bytes::complete::take_while;
use nom::error::{ErrorKind, ParseError};
use nom::{IResult, Parser};

/// Deeper nesting than this (templates, list/optional suffixes) is rejected, which keeps every
/// recursive walk over the AST, including `Drop`, far from the stack limit.
pub const MAX_NESTING: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PError<'a> {
    /// The input remaining where the error was found.
    pub at: &'a str,
    pub message: Cow<'static, str>,
}

impl<'a> ParseError<&'a str> for PError<'a> {
    fn from_error_kind(input: &'a str, kind: ErrorKind) -> Self {
        PError { at: input, message: Cow::Owned(format!("unexpected input ({})", kind.description())) }
    }

    fn append(_: &'a str, _: ErrorKind, other: Self) -> Self {
        other
    }
}

pub type PResult<'a, T> = IResult<&'a str, T, PError<'a>>;

/// An unrecoverable error at `at`.
pub fn fail<'a, T>(at: &'a str, message: impl Into<Cow<'static, str>>) -> PResult<'a, T> {
    Err(nom::Err::Failure(PError { at, message: message.into() }))
}

/// Consumes exactly `literal` or fails (cut) with `message` at the current position.
pub fn expect<'a>(input: &'a str, literal: &str, message: &'static str) -> PResult<'a, &'a str> {
    match input.strip_prefix(literal) {
        Some(rest) => Ok((rest, &input[..literal.len()])),
        None => fail(input, message),
    }
}

pub fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A C-style identifier, or a recoverable error (so callers can try alternatives).
/// Scans bytes directly: identifiers are ASCII, and this is the parser's hottest path.
pub fn ident(input: &str) -> PResult<'_, &str> {
    let bytes = input.as_bytes();
    if !bytes.first().is_some_and(|&b| is_ident_start(b as char)) {
        return Err(nom::Err::Error(PError { at: input, message: Cow::Borrowed("expected an identifier") }));
    }
    let n = bytes.iter().position(|&b| !is_ident_char(b as char)).unwrap_or(bytes.len());
    Ok((&input[n..], &input[..n]))
}

/// An identifier, or a cut error with `message`.
pub fn expect_ident<'a>(input: &'a str, message: &'static str) -> PResult<'a, &'a str> {
    match ident(input) {
        Ok(ok) => Ok(ok),
        Err(_) => fail(input, message),
    }
}

/// Optional horizontal whitespace.
pub fn ws(input: &str) -> PResult<'_, &str> {
    take_while(|c: char| c == ' ' || c == '\t').parse(input)
}
