//! Errors and warnings with a source position, rendered gcc-style as `file:line:col: error: ...`.
//!
//! The gcc form (rather than annotate-snippets' `--> file:line:col` form) is what editors and CI
//! log scanners link, and it is the form the project promises, so rendering is done here.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub col: u32,
    pub message: String,
    /// The offending line, without its line ending.
    pub source_line: String,
}

/// Lines longer than this are shown as a window around the column.
const MAX_SHOWN: usize = 120;

impl Diagnostic {
    pub fn error(line: u32, col: u32, message: impl Into<String>, source_line: &str) -> Self {
        Self::new(Severity::Error, line, col, message, source_line)
    }

    pub fn warning(line: u32, col: u32, message: impl Into<String>, source_line: &str) -> Self {
        Self::new(Severity::Warning, line, col, message, source_line)
    }

    fn new(severity: Severity, line: u32, col: u32, message: impl Into<String>, source_line: &str) -> Self {
        Diagnostic { severity, line, col, message: message.into(), source_line: source_line.to_owned() }
    }

    /// `path:line:col: error: message`, then the line and a caret under the column.
    pub fn render(&self, path: &str) -> String {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut out = format!("{path}:{}:{}: {kind}: {}\n", self.line, self.col, printable(&self.message));
        let chars: Vec<char> = self.source_line.chars().collect();
        let col = (self.col as usize).saturating_sub(1).min(chars.len());
        let (start, end) = if chars.len() <= MAX_SHOWN {
            (0, chars.len())
        } else {
            let start = col.saturating_sub(MAX_SHOWN / 2);
            (start, (start + MAX_SHOWN).min(chars.len()))
        };
        let lead = if start > 0 { "..." } else { "" };
        let tail = if end < chars.len() { "..." } else { "" };
        let shown: String = chars[start..end].iter().collect();
        let gutter = self.line.to_string().len();
        let _ = writeln!(out, "{} | {lead}{shown}{tail}", self.line);
        let _ = writeln!(out, "{:gutter$} | {}^", "", " ".repeat(lead.len() + col - start));
        out
    }
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), for text that must stay on one line:
/// a message quoting a config string, a command in a generated file's first-line comment.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.contains(char::is_control) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect())
}

/// Sorts diagnostics by position, as every phase reports them.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| (a.line, a.col, &a.message).cmp(&(b.line, b.col, &b.message)));
}

/// 1-based character column where `rest`, a subslice of `line`, starts.
pub fn column_of(line: &str, rest: &str) -> u32 {
    let offset = (rest.as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
    // A slice from elsewhere cannot be placed; fall back to reading it as a suffix.
    let offset = if offset <= line.len() { offset } else { line.len().saturating_sub(rest.len()) };
    column_at(line, offset)
}

/// 1-based character column of byte `offset` within `line`.
pub fn column_at(line: &str, offset: usize) -> u32 {
    let offset = offset.min(line.len());
    let prefix = line.get(..offset).unwrap_or(line);
    prefix.chars().count() as u32 + 1
}

/// An error at byte range `span` of `source` (a config file): its line and column, and the line
/// as shown.
pub(crate) fn diag_at(source: &str, span: &Range<usize>, message: String) -> Diagnostic {
    let start = span.start.min(source.len());
    let line_start = source[..start].rfind('\n').map_or(0, |k| k + 1);
    let line_end = source[start..].find('\n').map_or(source.len(), |k| start + k);
    // The line as shown, without a CRLF's `\r`; a position on that `\r` is the line's end.
    let line = source[line_start..line_end].trim_end_matches('\r');
    let line_no = source[..start].matches('\n').count() as u32 + 1;
    Diagnostic::error(line_no, column_at(line, start - line_start), message, line)
}
