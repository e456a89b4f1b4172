//! Parser for the function schema in a line's metadata: `aten::name.overload(args) -> returns`.
//!
//! The grammar is torchgen's `FunctionSchema.__str__` output, which is canonical, so separators
//! are matched exactly (", ", " -> "): anything the parser accepts prints back byte for byte.

use super::error::{MAX_NESTING, PResult, expect, expect_ident, fail, ident};
use crate::ir::{Annotation, Argument, BaseType, Ident, Return, Returns, Schema, SchemaType};
use crate::rust_name::is_cpp_reserved;

/// Parses a whole schema string; trailing text is an error.
///
/// Names are checked here, where their position is known, for what no later phase could mend
/// (`rust_name` escapes the rest): an op name needs a letter or digit (`aten::_` would have no
/// Rust name), an argument name must not be a C++ reserved identifier (`__LINE__`) nor repeat, and
/// a default value holds no control character (the schema is printed into C++ comments).
pub fn parse_schema(input: &str) -> PResult<'_, Schema> {
    let (i, namespace) = expect_ident(input, "expected the schema's namespace (e.g. `aten::`)")?;
    let (name_at, _) = expect(i, "::", "expected '::' after the schema's namespace")?;
    let (i, name) = expect_ident(name_at, "expected the op name")?;
    if !name.bytes().any(|b| b.is_ascii_alphanumeric()) {
        return fail(
            name_at,
            format!("op name `{name}` has no letter or digit, so it cannot name the op's Rust method"),
        );
    }
    let (i, overload) = match i.strip_prefix('.') {
        Some(rest) => expect_ident(rest, "expected an overload name after '.'")?,
        None => (i, ""),
    };
    let (i, _) = expect(i, "(", "expected '(' after the op name")?;
    let (i, arguments) = arguments(i)?;
    let (i, _) = expect(i, " -> ", "expected ' -> ' and the returns after the arguments")?;
    let (i, returns) = returns(i)?;
    if !i.is_empty() {
        return fail(i, "unexpected text after the returns");
    }
    let schema =
        Schema { namespace: namespace.into(), name: name.into(), overload: overload.into(), arguments, returns };
    Ok((i, schema))
}

/// The argument list after `(`, through the closing `)`.
fn arguments(input: &str) -> PResult<'_, Vec<Argument>> {
    let mut args = Vec::new();
    if let Some(rest) = input.strip_prefix(')') {
        return Ok((rest, args));
    }
    let mut kwarg_only = false;
    let mut i = input;
    loop {
        if let Some(rest) = i.strip_prefix('*') {
            if kwarg_only {
                return fail(i, "a second '*' in the argument list");
            }
            kwarg_only = true;
            let (rest, _) = expect(rest, ", ", "expected ', ' and keyword-only arguments after '*'")?;
            i = rest;
        }
        let (rest, arg) = argument(i, kwarg_only, &args)?;
        args.push(arg);
        if let Some(rest) = rest.strip_prefix(", ") {
            i = rest;
        } else if let Some(rest) = rest.strip_prefix(')') {
            // The model lives until generation ends: no spare capacity in its ~15,000 arguments.
            args.shrink_to_fit();
            return Ok((rest, args));
        } else {
            return fail(rest, "expected ', ' or ')' after an argument");
        }
    }
}

/// One argument; `before` are the arguments already read, whose names it must not repeat.
fn argument<'a>(input: &'a str, kwarg_only: bool, before: &[Argument]) -> PResult<'a, Argument> {
    let (i, (ty, annotation)) = annotated_type(input)?;
    let (name_at, _) = expect(i, " ", "expected a space and the argument name after its type")?;
    let (i, name) = expect_ident(name_at, "expected the argument name")?;
    if is_cpp_reserved(name) {
        return fail(
            name_at,
            format!(
                "argument name `{name}` is reserved in C++ (it starts with a double underscore, or an underscore \
                 and a capital letter), where compilers define macros"
            ),
        );
    }
    if let Some(k) = before.iter().position(|a| a.name == name) {
        return fail(name_at, format!("argument `{name}` is declared twice (first as argument {})", k + 1));
    }
    let (i, default) = match i.strip_prefix('=') {
        Some(rest) => {
            let (rest, d) = default_value(rest)?;
            (rest, Some(d.into()))
        }
        None => (i, None),
    };
    Ok((i, Argument { name: name.into(), ty, annotation, default, kwarg_only }))
}

/// `Base[(annotation)][?|[]|[N]]*`
fn annotated_type(input: &str) -> PResult<'_, (SchemaType, Option<Annotation>)> {
    let (i, base) = expect_ident(input, "expected a type")?;
    let (mut i, annotation) = match i.strip_prefix('(') {
        Some(rest) => {
            let (rest, a) = annotation(rest)?;
            (rest, Some(a))
        }
        None => (i, None),
    };
    let mut ty = SchemaType::Base(BaseType::from_name(base));
    let mut depth = 0;
    loop {
        let next = if let Some(rest) = i.strip_prefix('?') {
            ty = SchemaType::Optional(Box::new(ty));
            rest
        } else if let Some(rest) = i.strip_prefix("[]") {
            ty = SchemaType::List(Box::new(ty), None);
            rest
        } else if let Some(rest) = i.strip_prefix('[') {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let Ok(n) = rest[..digits].parse::<u32>() else {
                return fail(rest, "expected a list size or ']' after '['");
            };
            let (rest, _) = expect(&rest[digits..], "]", "expected ']' after the list size")?;
            ty = SchemaType::List(Box::new(ty), Some(n));
            rest
        } else {
            return Ok((i, (ty, annotation)));
        };
        depth += 1;
        if depth > MAX_NESTING {
            return fail(i, "type nested too deeply");
        }
        i = next;
    }
}

/// The inside of `(...)` after a base type, through the `)`.
fn annotation(input: &str) -> PResult<'_, Annotation> {
    let (i, before) = alias_set(input)?;
    let (i, is_write) = match i.strip_prefix('!') {
        Some(rest) => (rest, true),
        None => (i, false),
    };
    let (i, alias_set_after) = match i.strip_prefix(" -> ") {
        Some(rest) => alias_set(rest)?,
        None => (i, Vec::new()),
    };
    let (i, _) = expect(i, ")", "expected ')' to close the alias annotation")?;
    Ok((i, Annotation { alias_set: before, is_write, alias_set_after }))
}

/// `a`, `a|b` or `*`.
fn alias_set(input: &str) -> PResult<'_, Vec<Ident>> {
    let mut set = Vec::new();
    let mut i = input;
    loop {
        let (rest, alias) = match i.strip_prefix('*') {
            Some(rest) => (rest, "*"),
            None => match ident(i) {
                Ok(ok) => ok,
                Err(_) => return fail(i, "expected an alias name or '*' in the annotation"),
            },
        };
        set.push(alias.into());
        match rest.strip_prefix('|') {
            Some(rest) => i = rest,
            None => {
                set.shrink_to_fit();
                return Ok((rest, set));
            }
        }
    }
}

/// A default value exactly as written: a quoted string, a `[...]` list, or a bare token.
fn default_value(input: &str) -> PResult<'_, &str> {
    let end = match input.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let mut escaped = false;
            let close = input[1..].char_indices().find_map(|(k, c)| {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    return Some(k + 2);
                }
                None
            });
            match close {
                Some(end) => end,
                None => return fail(input, "unterminated string in the default value"),
            }
        }
        Some('[') => {
            // Counted iteratively: nesting depth cannot overflow anything.
            let mut depth = 0usize;
            let close = input.char_indices().find_map(|(k, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(k + 1)
            });
            match close {
                Some(end) => end,
                None => return fail(input, "unbalanced '[' in the default value"),
            }
        }
        _ => input.find([',', ')', ' ']).unwrap_or(input.len()),
    };
    if end == 0 {
        return fail(input, "empty default value after '='");
    }
    if let Some(k) = input[..end].find(char::is_control) {
        return fail(&input[k..], "control character in a default value");
    }
    Ok((&input[end..], &input[..end]))
}

/// The returns after ` -> `.
fn returns(input: &str) -> PResult<'_, Returns> {
    let Some(mut i) = input.strip_prefix('(') else {
        let (rest, r) = single_return(input)?;
        return Ok((rest, Returns { items: vec![r], parenthesized: false }));
    };
    let mut items = Vec::new();
    if let Some(rest) = i.strip_prefix(')') {
        return Ok((rest, Returns { items, parenthesized: true }));
    }
    loop {
        let (rest, r) = single_return(i)?;
        items.push(r);
        if let Some(rest) = rest.strip_prefix(", ") {
            i = rest;
        } else if let Some(rest) = rest.strip_prefix(')') {
            items.shrink_to_fit();
            return Ok((rest, Returns { items, parenthesized: true }));
        } else {
            return fail(rest, "expected ', ' or ')' after a return");
        }
    }
}

fn single_return(input: &str) -> PResult<'_, Return> {
    let (i, (ty, annotation)) = annotated_type(input)?;
    let (i, name) = match i.strip_prefix(' ') {
        Some(rest) => {
            let (rest, n) = expect_ident(rest, "expected the return's name after the space")?;
            (rest, Some(n.into()))
        }
        None => (i, None),
    };
    Ok((i, Return { name, ty, annotation }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(s: &str) -> Schema {
        let (rest, schema) = parse_schema(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
        assert_eq!(rest, "");
        assert_eq!(schema.to_string(), s);
        schema
    }

    fn error_at(s: &str) -> (usize, String) {
        match parse_schema(s) {
            Err(nom::Err::Failure(e)) => (s.len() - e.at.len(), e.message.into_owned()),
            other => panic!("expected a failure for {s}, got {other:?}"),
        }
    }

    #[test]
    fn annotations_lists_and_kwargs() {
        let s = roundtrip(
            "aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()",
        );
        assert_eq!(s.overload, "out");
        let out = &s.arguments[3];
        assert!(out.kwarg_only);
        assert_eq!(out.annotation.as_ref().unwrap().to_string(), "a!");
        assert_eq!(out.ty, SchemaType::List(Box::new(SchemaType::Base(BaseType::Tensor)), None));
        assert!(s.returns.items.is_empty() && s.returns.parenthesized);
    }

    #[test]
    fn view_annotation_with_arrow_and_named_tuple_returns() {
        let s = roundtrip("aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]");
        assert_eq!(s.arguments[0].annotation.as_ref().unwrap().alias_set_after, vec!["*"]);
        let s = roundtrip(
            "aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
        );
        assert_eq!(s.returns.items[1].name.as_deref(), Some("indices"));
    }

    #[test]
    fn defaults_as_written() {
        let s = roundtrip(r#"aten::_test_string_default(Tensor dummy, str a="\"'\\", str b='"\'\\') -> Tensor"#);
        assert_eq!(s.arguments[1].default.as_deref(), Some(r#""\"'\\""#));
        assert_eq!(s.arguments[2].default.as_deref(), Some(r#"'"\'\\'"#));
        let s = roundtrip(
            "aten::f(int[2] a=[-2,-1], float? b=1e-05, ScalarType? dtype=long, Tensor?[] c) -> Tensor[] self_out",
        );
        assert_eq!(s.arguments[0].default.as_deref(), Some("[-2,-1]"));
        assert_eq!(s.returns.items[0].name.as_deref(), Some("self_out"));
    }

    #[test]
    fn unknown_types_are_opaque() {
        let s = roundtrip("aten::f(FutureType? x) -> FutureType");
        assert_eq!(s.arguments[0].ty.base(), &BaseType::Opaque("FutureType".into()));
    }

    #[test]
    fn malformed() {
        assert_eq!(error_at("aten::f(Tensor self) Tensor").1, "expected ' -> ' and the returns after the arguments");
        assert_eq!(error_at("aten::f(Tensor self -> Tensor").0, "aten::f(Tensor self".len());
        assert_eq!(
            error_at("aten::f(int x=) -> Tensor"),
            ("aten::f(int x=".len(), "empty default value after '='".into())
        );
        assert!(error_at("aten::f(str x=\"abc) -> Tensor").1.contains("unterminated"));
        let deep = format!("aten::f(Tensor{} x) -> Tensor", "[]".repeat(200_000));
        assert_eq!(error_at(&deep).1, "type nested too deeply");
    }

    #[test]
    fn names_no_later_phase_could_spell() {
        // The op name `_` (found by fuzzing: it became the Rust method `_`).
        let (at, message) = error_at("aten::_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
        assert_eq!(
            (at, message.as_str()),
            (6, "op name `_` has no letter or digit, so it cannot name the op's Rust method")
        );
        assert_eq!(error_at("aten::___.out(Tensor self) -> Tensor").0, 6);
        // Keywords are escaped later, not rejected: `where` and an argument `int` are fine here.
        roundtrip("aten::where(Tensor condition, int int) -> Tensor[]");
        roundtrip("aten::_1(Tensor _) -> Tensor");
        let (at, message) = error_at("aten::f(Tensor self, int __LINE__) -> Tensor");
        assert_eq!(at, "aten::f(Tensor self, int ".len());
        assert!(message.starts_with("argument name `__LINE__` is reserved in C++"), "{message}");
        assert!(error_at("aten::f(Tensor _Pragma) -> Tensor").1.contains("reserved in C++"));
        assert_eq!(
            error_at("aten::f(Tensor self, *, Tensor(a!) self) -> Tensor"),
            (
                "aten::f(Tensor self, *, Tensor(a!) ".len(),
                "argument `self` is declared twice (first as argument 1)".into()
            )
        );
        assert_eq!(
            error_at("aten::f(str s=\"a\nb\") -> Tensor"),
            ("aten::f(str s=\"a".len(), "control character in a default value".into())
        );
        assert_eq!(error_at("aten::f(int x=1\t) -> Tensor").0, "aten::f(int x=1".len());
    }
}
