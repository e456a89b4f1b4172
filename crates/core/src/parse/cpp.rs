//! Parser for the C++ half of a header line: `RET name(TYPE param, ...)`.
//!
//! Each parameter's text is delimited first (`,` or `)` at template depth 0), its trailing
//! identifier is the name, and the rest is the type, parsed once per distinct spelling
//! through [`CppTypeCache`] (a release spells only about a hundred distinct types).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::error::{MAX_NESTING, PResult, expect_ident, fail, ident, is_ident_char, is_ident_start, ws};
use crate::ir::{CppDecl, CppIndirection, CppParam, CppTemplateArg, CppType};

/// Parsed types by spelling, shared by every line of one header.
#[derive(Default)]
pub struct CppTypeCache<'a> {
    types: FxHashMap<&'a str, Arc<CppType>>,
}

impl<'a> CppTypeCache<'a> {
    /// The type spelled exactly `text` (trimmed, non-empty), parsed on first sight.
    fn get(&mut self, text: &'a str) -> PResult<'a, Arc<CppType>> {
        if let Some(t) = self.types.get(text) {
            return Ok(("", Arc::clone(t)));
        }
        let (rest, ty) = match cpp_type(text, 0) {
            Ok(ok) => ok,
            Err(nom::Err::Error(_)) => return fail(text, "expected a C++ type"),
            Err(e) => return Err(e),
        };
        if !rest.is_empty() {
            return fail(rest, "unexpected text in a C++ type");
        }
        let ty = Arc::new(ty);
        self.types.insert(text, Arc::clone(&ty));
        Ok(("", ty))
    }
}

/// Parses the declaration up to and including its closing `)`.
pub fn parse_cpp_decl<'a>(input: &'a str, cache: &mut CppTypeCache<'a>) -> PResult<'a, CppDecl> {
    let (input, _) = ws(input)?;
    // Return types contain no parentheses, so the first `(` opens the parameter list.
    let Some(open) = input.find('(') else {
        return fail(
            input,
            "expected a C++ declaration `RET name(params); // {metadata}`, a comment or a preprocessor line",
        );
    };
    let (_, (ret_text, name)) = split_name(&input[..open], "expected the function name before '('")?;
    let (_, return_type) = cache.get(ret_text)?;
    let mut params = Vec::new();
    let mut i = &input[open + 1..];
    if let Some(rest) = ws(i)?.0.strip_prefix(')') {
        return Ok((rest, CppDecl { return_type, name: name.into(), params }));
    }
    loop {
        let end = match param_end(i) {
            Ok(end) => end,
            Err(Some(open)) => return fail(&i[open..], "unclosed '<' in a parameter type"),
            Err(None) => return fail(&i[i.len()..], "expected ',' or ')' in the parameter list"),
        };
        let (_, (ty_text, pname)) = split_name(&i[..end], "expected a parameter name after its type")?;
        let (_, ty) = cache.get(ty_text)?;
        params.push(CppParam { ty, name: pname.into() });
        let rest = &i[end + 1..];
        if i.as_bytes()[end] == b')' {
            // Like the schema's arguments: the model keeps no spare capacity.
            params.shrink_to_fit();
            return Ok((rest, CppDecl { return_type, name: name.into(), params }));
        }
        i = rest;
    }
}

/// Offset of the `,` or `)` ending the parameter that starts `input`, counting `<...>` depth
/// iteratively (no recursion, whatever the nesting). Without one, the offset of the outermost
/// unclosed `<`, if any.
fn param_end(input: &str) -> Result<usize, Option<usize>> {
    let mut depth = 0usize;
    let mut outer_open = None;
    for (k, b) in input.bytes().enumerate() {
        match b {
            b'<' => {
                if depth == 0 {
                    outer_open = Some(k);
                }
                depth += 1;
            }
            b'>' => depth = depth.saturating_sub(1),
            b',' | b')' if depth == 0 => return Ok(k),
            _ => {}
        }
    }
    Err(outer_open.filter(|_| depth > 0))
}

/// Splits `TYPE name` into the trimmed type text and the trailing identifier.
fn split_name<'a>(text: &'a str, message: &'static str) -> PResult<'a, (&'a str, &'a str)> {
    let text = text.trim_end();
    let start = text.len() - text.bytes().rev().take_while(|&b| is_ident_char(b as char)).count();
    let name = &text[start..];
    if !name.starts_with(is_ident_start) {
        return fail(&text[start..], message);
    }
    let ty = text[..start].trim();
    if ty.is_empty() {
        return fail(text, "expected a C++ type before the name");
    }
    Ok(("", (ty, name)))
}

/// `[const] [::]a::b[<args>] [&|*]`. A recoverable error when no type starts here.
fn cpp_type(input: &str, depth: usize) -> PResult<'_, CppType> {
    if depth > MAX_NESTING {
        return fail(input, "C++ type nested too deeply");
    }
    let start = input;
    let (i, is_const) = match input.strip_prefix("const") {
        Some(rest) if rest.starts_with([' ', '\t']) => (ws(rest)?.0, true),
        _ => (input, false),
    };
    let (i, path) = qualified_name(i)?;
    let (after_ws, _) = ws(i)?;
    let (i, template_args) =
        if let Some(rest) = after_ws.strip_prefix('<') { template_args(rest, depth)? } else { (i, Vec::new()) };
    let (after_ws, _) = ws(i)?;
    let (i, indirection) = if let Some(rest) = after_ws.strip_prefix('&') {
        (rest, CppIndirection::Reference)
    } else if let Some(rest) = after_ws.strip_prefix('*') {
        (rest, CppIndirection::Pointer)
    } else {
        (i, CppIndirection::None)
    };
    let spelling = start[..start.len() - i.len()].trim_end().to_owned();
    Ok((i, CppType { spelling, is_const, path: path.to_owned(), template_args, indirection }))
}

/// `[::]ident(::ident)*`, returned as written.
fn qualified_name(input: &str) -> PResult<'_, &str> {
    let mut i = input.strip_prefix("::").unwrap_or(input);
    let (rest, _) = ident(i)?;
    i = rest;
    while let Some(rest) = i.strip_prefix("::") {
        let (rest, _) = expect_ident(rest, "expected a name after '::'")?;
        i = rest;
    }
    Ok((i, &input[..input.len() - i.len()]))
}

/// The arguments after `<`, through the closing `>`.
fn template_args(input: &str, depth: usize) -> PResult<'_, Vec<CppTemplateArg>> {
    let mut args = Vec::new();
    let mut i = input;
    loop {
        let (rest, _) = ws(i)?;
        let (rest, arg) = if rest.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            // An integer, `-` and digits, so that the spelling is a C++ literal.
            let digits = rest.strip_prefix('-').unwrap_or(rest);
            let n = digits.len() - digits.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if n == 0 {
                return fail(digits, "expected digits in a template argument");
            }
            let r = &digits[n..];
            (r, CppTemplateArg::Value(rest[..rest.len() - r.len()].to_owned()))
        } else {
            match cpp_type(rest, depth + 1) {
                Ok((r, t)) => (r, CppTemplateArg::Type(t)),
                Err(nom::Err::Error(_)) => return fail(rest, "expected a template argument"),
                Err(e) => return Err(e),
            }
        };
        args.push(arg);
        let (rest, _) = ws(rest)?;
        if let Some(rest) = rest.strip_prefix(',') {
            i = rest;
        } else if let Some(rest) = rest.strip_prefix('>') {
            return Ok((rest, args));
        } else {
            return fail(rest, "expected ',' or '>' in the template argument list");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(s: &str) -> CppDecl {
        let mut cache = CppTypeCache::default();
        let (rest, d) = parse_cpp_decl(s, &mut cache).unwrap();
        assert_eq!(rest, "");
        d
    }

    fn failure(s: &str) -> (usize, String) {
        let mut cache = CppTypeCache::default();
        match parse_cpp_decl(s, &mut cache) {
            Err(nom::Err::Failure(e)) => (e.at.as_ptr() as usize - s.as_ptr() as usize, e.message.into_owned()),
            other => panic!("expected a failure for {s}, got {other:?}"),
        }
    }

    #[test]
    fn nested_templates_and_references() {
        let d = decl(
            "::std::tuple<at::Tensor &,at::Tensor &> f(const c10::List<::std::optional<at::Tensor>> & indices, ::std::array<bool,3> mask)",
        );
        assert_eq!(d.name, "f");
        assert_eq!(d.return_type.spelling, "::std::tuple<at::Tensor &,at::Tensor &>");
        assert_eq!(d.return_type.template_args.len(), 2);
        assert_eq!(d.params[0].ty.spelling, "const c10::List<::std::optional<at::Tensor>> &");
        assert!(d.params[0].ty.is_const);
        assert_eq!(d.params[0].ty.indirection, CppIndirection::Reference);
        assert_eq!(d.params[0].name, "indices");
        let bool_ty = CppType {
            spelling: "bool".into(),
            is_const: false,
            path: "bool".into(),
            template_args: vec![],
            indirection: CppIndirection::None,
        };
        assert_eq!(
            d.params[1].ty.template_args,
            vec![CppTemplateArg::Type(bool_ty), CppTemplateArg::Value("3".into())]
        );
    }

    #[test]
    fn spellings_are_shared() {
        let mut cache = CppTypeCache::default();
        let text = "at::Tensor f(const at::Tensor & a, const at::Tensor & b)";
        let (_, d) = parse_cpp_decl(text, &mut cache).unwrap();
        assert!(Arc::ptr_eq(&d.params[0].ty, &d.params[1].ty));
    }

    #[test]
    fn empty_parameter_list() {
        assert!(decl("at::Tensor _make_dep_token()").params.is_empty());
    }

    #[test]
    fn malformed() {
        assert_eq!(failure("garbage here").0, 0);
        assert_eq!(
            failure("at::Tensor f(const at::Tensor & self"),
            (36, "expected ',' or ')' in the parameter list".into())
        );
        assert_eq!(failure("at::Tensor f(self)").1, "expected a C++ type before the name");
        assert_eq!(
            failure("at::Tensor f(::std::optional<at::Tensor x)"),
            (28, "unclosed '<' in a parameter type".into())
        );
        assert_eq!(
            failure("at::Tensor f(::std::optional<at::Tensor x> y)").1,
            "expected ',' or '>' in the template argument list"
        );
    }

    #[test]
    fn template_values_are_integers() {
        let d = decl("at::Tensor f(::std::array<bool,-3> a)");
        assert_eq!(d.params[0].ty.template_args[1], CppTemplateArg::Value("-3".into()));
        // `-` alone (or `--`) would be spelled into a wrapper's signature as it is.
        assert_eq!(
            failure("at::Tensor f(::std::array<bool,-> a)"),
            (32, "expected digits in a template argument".into())
        );
        assert_eq!(failure("at::Tensor f(::std::array<bool,--3> a)").1, "expected digits in a template argument");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}int{} f(int x)", "a<".repeat(200_000), ">".repeat(200_000));
        assert!(failure(&deep).1.contains("nested too deeply"));
    }
}
