//! Parser for the C++ half of a header line: `RET name(TYPE param, ...)`.

use nom::Parser;
use nom::bytes::complete::take_while1;

use super::error::{MAX_NESTING, PResult, expect, expect_ident, fail, ident, ws};
use crate::ir::{CppDecl, CppIndirection, CppParam, CppTemplateArg, CppType};

/// Parses the declaration up to and including its closing `)`.
pub fn parse_cpp_decl(input: &str) -> PResult<'_, CppDecl> {
    let (i, _) = ws(input)?;
    let (i, return_type) = match cpp_type(i, 0) {
        Ok(ok) => ok,
        Err(nom::Err::Error(_)) => return fail(i, "expected a C++ declaration, a comment or a preprocessor line"),
        Err(e) => return Err(e),
    };
    let (i, _) = ws(i)?;
    let (i, name) = expect_ident(i, "expected the function name after the return type")?;
    let (i, _) = ws(i)?;
    let (mut i, _) = expect(i, "(", "expected '(' after the function name")?;
    let mut params = Vec::new();
    let (rest, _) = ws(i)?;
    if let Some(rest) = rest.strip_prefix(')') {
        return Ok((rest, CppDecl { return_type, name: name.to_owned(), params }));
    }
    loop {
        let (rest, _) = ws(i)?;
        let (rest, ty) = match cpp_type(rest, 0) {
            Ok(ok) => ok,
            Err(nom::Err::Error(_)) => return fail(rest, "expected a parameter type"),
            Err(e) => return Err(e),
        };
        let (rest, _) = ws(rest)?;
        let (rest, pname) = expect_ident(rest, "expected a parameter name after its type")?;
        params.push(CppParam { ty, name: pname.to_owned() });
        let (rest, _) = ws(rest)?;
        if let Some(rest) = rest.strip_prefix(',') {
            i = rest;
        } else if let Some(rest) = rest.strip_prefix(')') {
            return Ok((rest, CppDecl { return_type, name: name.to_owned(), params }));
        } else {
            return fail(rest, "expected ',' or ')' in the parameter list");
        }
    }
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
    let (mut i, _) = match input.strip_prefix("::") {
        Some(rest) => (rest, ()),
        None => (input, ()),
    };
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
            let (r, v) = take_while1(|c: char| c.is_ascii_digit() || c == '-').parse(rest)?;
            (r, CppTemplateArg::Value(v.to_owned()))
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
        let (rest, d) = parse_cpp_decl(s).unwrap();
        assert_eq!(rest, "");
        d
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
        assert_eq!(
            d.params[1].ty.template_args,
            vec![
                CppTemplateArg::Type(CppType {
                    spelling: "bool".into(),
                    is_const: false,
                    path: "bool".into(),
                    template_args: vec![],
                    indirection: CppIndirection::None
                }),
                CppTemplateArg::Value("3".into())
            ]
        );
    }

    #[test]
    fn empty_parameter_list() {
        let d = decl("at::Tensor _make_dep_token()");
        assert!(d.params.is_empty());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}int{} f(int x)", "a<".repeat(200_000), ">".repeat(200_000));
        let err = parse_cpp_decl(&deep).unwrap_err();
        match err {
            nom::Err::Failure(e) => assert!(e.message.contains("nested too deeply")),
            other => panic!("{other:?}"),
        }
    }
}
