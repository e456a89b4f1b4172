//! Reads RegistrationDeclarations.h line by line into declarations (C++ AST + schema AST + flags).
//!
//! Every line is one of: a declaration with its `// {json}` metadata, a `//` comment, a
//! preprocessor line (2.10+ wrap the file in `#if`/`#else`/`#error`/`#endif`) or blank.
//! All errors of the file are collected, sorted by position, and returned together.

pub mod cpp;
pub mod error;
pub mod meta;
pub mod schema;

use crate::diagnostic::{self, Diagnostic, column_at, column_of};
use crate::ir::{BaseType, CppDecl, Schema};
use error::{PError, expect, ws};

/// One declaration line, before the model is assembled.
#[derive(Debug, Clone)]
pub struct Decl {
    /// 1-based line number.
    pub line: u32,
    pub cpp: CppDecl,
    /// The schema string after JSON unescaping, exactly as PyTorch wrote it.
    pub schema_text: String,
    pub schema: Schema,
    pub dispatch: bool,
    pub default: bool,
    /// Column of the C++ parameter list's `(`, for diagnostics of later phases.
    pub params_col: u32,
    /// Column where the schema string starts.
    pub schema_col: u32,
    /// Column of the op name in the schema (after `aten::`), for clashes between ops' names.
    pub name_col: u32,
}

#[derive(Debug, Clone)]
pub struct ParsedHeader {
    pub decls: Vec<Decl>,
    pub warnings: Vec<Diagnostic>,
}

/// Checks the bytes are UTF-8, pointing at the first bad byte otherwise.
pub fn decode_header(bytes: &[u8]) -> Result<&str, Diagnostic> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let bad = e.valid_up_to();
        let line_start = bytes[..bad].iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1);
        let line_end = bytes[bad..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |k| bad + k);
        let line_no = bytes[..bad].iter().filter(|&&b| b == b'\n').count() as u32 + 1;
        let valid = std::str::from_utf8(&bytes[line_start..bad]).unwrap_or_default();
        let shown = String::from_utf8_lossy(&bytes[line_start..line_end]);
        Diagnostic::error(
            line_no,
            valid.chars().count() as u32 + 1,
            format!("invalid UTF-8 (byte 0x{:02x})", bytes[bad]),
            shown.trim_end_matches('\r'),
        )
    })?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// Parses every line; returns all declarations or every error found.
pub fn parse_header(text: &str) -> Result<ParsedHeader, Vec<Diagnostic>> {
    // Lines are independent: a whole header is parsed in two halves on two cores (parsing is
    // a third of a whole `regen` run), each with its own type cache; a small one in one piece.
    // Searched as bytes: the middle byte may be inside a character, a '\n' never is.
    let split = if text.len() >= 1 << 16 {
        let middle = text.len() / 2;
        text.as_bytes()[middle..].iter().position(|&b| b == b'\n').map_or(text.len(), |k| middle + k + 1)
    } else {
        text.len()
    };
    let (head, tail) = text.split_at(split);
    let first = if tail.is_empty() {
        parse_lines(head, 1)
    } else {
        // `head` ends with its last line's '\n', so it holds that many lines.
        let first_line = head.bytes().filter(|&b| b == b'\n').count() as u32 + 1;
        let (mut second, mut first) = crate::parallel::join(|| parse_lines(tail, first_line), || parse_lines(head, 1));
        first.decls.append(&mut second.decls);
        first.errors.append(&mut second.errors);
        first.warnings.append(&mut second.warnings);
        first
    };
    let Lines { decls, mut errors, mut warnings } = first;
    if decls.is_empty() && errors.is_empty() {
        let first = text.lines().next().unwrap_or("").trim_end();
        errors.push(Diagnostic::error(1, 1, "no op declarations found (expected RegistrationDeclarations.h)", first));
    }
    if errors.is_empty() {
        diagnostic::sort(&mut warnings);
        Ok(ParsedHeader { decls, warnings })
    } else {
        diagnostic::sort(&mut errors);
        Err(errors)
    }
}

/// What parsing some of a header's lines found.
struct Lines {
    decls: Vec<Decl>,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

/// Parses `text`, whose first line is line `first_line` of the header.
fn parse_lines(text: &str, first_line: u32) -> Lines {
    let mut lines = Lines { decls: Vec::with_capacity(text.len() / 256), errors: Vec::new(), warnings: Vec::new() };
    let mut cpp_types = cpp::CppTypeCache::default();
    for (k, raw_line) in text.lines().enumerate() {
        let line_no = first_line + k as u32;
        let line = raw_line.trim_end();
        let content = line.trim_start();
        if content.is_empty() || content.starts_with("//") || content.starts_with('#') {
            continue;
        }
        match parse_decl_line(line, line_no, &mut cpp_types) {
            Ok(decl) => {
                collect_opaque_types(&decl, line, &mut lines.warnings);
                lines.decls.push(decl);
            }
            Err(mut errs) => lines.errors.append(&mut errs),
        }
    }
    lines
}

fn parse_decl_line<'a>(
    line: &'a str,
    line_no: u32,
    cpp_types: &mut cpp::CppTypeCache<'a>,
) -> Result<Decl, Vec<Diagnostic>> {
    let err_at = |e: PError<'_>| vec![Diagnostic::error(line_no, column_of(line, e.at), e.message, line)];
    let (rest, cpp) = cpp::parse_cpp_decl(line, cpp_types).map_err(|e| err_at(unwrap_nom(e, line)))?;
    let params_col = line.find('(').map_or(1, |k| column_at(line, k));
    let (_, json) = metadata_json(rest).map_err(|e| err_at(unwrap_nom(e, rest)))?;
    let json_start = line.len() - json.len();
    let meta = meta::parse_meta(json).map_err(|errs| {
        errs.into_iter()
            .map(|e| Diagnostic::error(line_no, column_at(line, json_start + e.offset), e.message, line))
            .collect::<Vec<_>>()
    })?;
    let schema_raw = &json[meta.schema_start..];
    let (_, schema) = schema::parse_schema(&meta.schema).map_err(|e| {
        let e = unwrap_nom(e, &meta.schema);
        let offset = meta.schema.len() - e.at.len();
        let col = column_at(line, json_start + meta.schema_start + meta::raw_offset(schema_raw, offset));
        vec![Diagnostic::error(line_no, col, format!("in schema: {}", e.message), line)]
    })?;
    let schema_col = column_at(line, json_start + meta.schema_start);
    // The generated registrations are `TORCH_LIBRARY_IMPL(aten, ...)`: an op of another namespace
    // would be registered under a name it does not have.
    if schema.namespace != "aten" {
        let message = format!(
            "in schema: namespace `{}`, but RegistrationDeclarations.h declares `aten` ops (regen registers them as such)",
            schema.namespace
        );
        return Err(vec![Diagnostic::error(line_no, schema_col, message, line)]);
    }
    let name_offset = meta::raw_offset(schema_raw, schema.namespace.len() + "::".len());
    let name_col = column_at(line, json_start + meta.schema_start + name_offset);
    Ok(Decl {
        line: line_no,
        cpp,
        schema_text: meta.schema.into_owned(),
        schema,
        dispatch: meta.dispatch,
        default: meta.default,
        params_col,
        schema_col,
        name_col,
    })
}

/// `; // {json}` after the declaration: returns the JSON text.
fn metadata_json(rest: &str) -> error::PResult<'_, &str> {
    let (i, _) = ws(rest)?;
    // Point at the end of the declaration, where the ';' belongs, not at what follows.
    let Some(i) = i.strip_prefix(';') else {
        return error::fail(rest, "expected ';' after the declaration");
    };
    let (i, _) = ws(i)?;
    let (i, _) = expect(i, "//", "expected the `// {...}` metadata comment after ';'")?;
    let (i, _) = ws(i)?;
    Ok(("", i))
}

/// Our parsers never return `Incomplete`; both other variants carry the position.
fn unwrap_nom<'a>(e: nom::Err<PError<'a>>, input: &'a str) -> PError<'a> {
    match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
        nom::Err::Incomplete(_) => PError { at: input, message: "unexpected end of line".into() },
    }
}

/// A type name this model does not know is kept as opaque; say so, once per op and type.
fn collect_opaque_types(decl: &Decl, line: &str, warnings: &mut Vec<Diagnostic>) {
    let types = decl.schema.arguments.iter().map(|a| &a.ty).chain(decl.schema.returns.items.iter().map(|r| &r.ty));
    let mut seen: Vec<&str> = Vec::new();
    for ty in types {
        if let BaseType::Opaque(name) = ty.base()
            && !seen.contains(&name.as_str())
        {
            seen.push(name);
            // The schema follows the C++ declaration, so its last mention is the schema's.
            let col = line.rfind(name.as_str()).map_or(decl.schema_col, |k| column_at(line, k));
            warnings.push(Diagnostic::warning(
                decl.line,
                col,
                format!(
                    "op `{}` uses schema type `{name}`, which regen does not know; it is kept as an opaque type",
                    decl.schema.key()
                ),
                line,
            ));
        }
    }
}
