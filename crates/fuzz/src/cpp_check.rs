//! A lexical check of generated C++, for what header text could break without a compiler at hand:
//! control characters, a `//` comment continued onto the next line by a trailing backslash, a
//! string literal that does not close on its line, unbalanced brackets (text leaking out of a
//! comment), a C++ keyword or reserved identifier used as a name, and a parameter list that
//! declares one name twice. Preprocessor lines are skipped.

use regen_core::rust_name::{CPP_KEYWORDS, is_cpp_reserved};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    Punct(char),
    Literal,
}

/// Keywords that may stand where a name would: `f(void)`, `g(x, true)`, `return this)`.
const VALUE_KEYWORDS: &[&str] = &["void", "this", "true", "false", "nullptr"];

pub fn check(text: &str) -> Result<(), String> {
    for (n, line) in text.lines().enumerate() {
        if let Some(c) = line.chars().find(|&c| c.is_control() && c != '\t') {
            return Err(format!("line {}: control character {c:?}", n + 1));
        }
    }
    let tokens = lex(text)?;
    check_brackets(&tokens)?;
    check_names(&tokens)?;
    check_parameter_lists(&tokens)
}

/// Tokens with their line numbers; comments, literals' contents and preprocessor lines dropped.
fn lex(text: &str) -> Result<Vec<(usize, Tok<'_>)>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut n = 1;
    let mut line_start = true;
    let mut k = 0;
    while k < b.len() {
        let c = b[k];
        let line_end = || text[k..].find('\n').map_or(b.len(), |e| k + e);
        if c == b'\n' {
            n += 1;
            line_start = true;
            k += 1;
            continue;
        }
        if line_start && c == b'#' {
            k = line_end();
            continue;
        }
        if !c.is_ascii_whitespace() {
            line_start = false;
        }
        if text[k..].starts_with("//") {
            let end = line_end();
            if text[..end].ends_with('\\') {
                return Err(format!("line {n}: a `//` comment ends in a backslash and swallows the next line"));
            }
            k = end;
        } else if text[k..].starts_with("/*") {
            let end = text[k + 2..].find("*/").ok_or_else(|| format!("line {n}: unterminated /* comment"))?;
            n += text[k..k + 2 + end].matches('\n').count();
            k += end + 4;
        } else if c == b'"' || c == b'\'' {
            let mut j = k + 1;
            loop {
                match b.get(j) {
                    None | Some(b'\n') => {
                        return Err(format!("line {n}: unterminated literal: {}", &text[k..line_end()]));
                    }
                    Some(b'\\') => j += 2,
                    Some(&q) if q == c => break,
                    Some(_) => j += 1,
                }
            }
            out.push((n, Tok::Literal));
            k = j + 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = k;
            while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_') {
                k += 1;
            }
            out.push((n, Tok::Ident(&text[start..k])));
        } else if c.is_ascii_digit() {
            while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_' || b[k] == b'.') {
                k += 1;
            }
            out.push((n, Tok::Literal));
        } else if c.is_ascii_whitespace() {
            k += 1;
        } else if c.is_ascii() {
            out.push((n, Tok::Punct(c as char)));
            k += 1;
        } else {
            return Err(format!("line {n}: non-ASCII text outside a comment or literal: {}", &text[k..line_end()]));
        }
    }
    Ok(out)
}

fn check_brackets(tokens: &[(usize, Tok<'_>)]) -> Result<(), String> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    for (n, t) in tokens {
        if let Tok::Punct(c) = t {
            match c {
                '(' | '[' | '{' => stack.push((*c, *n)),
                ')' | ']' | '}' => {
                    let open = match c {
                        ')' => '(',
                        ']' => '[',
                        _ => '{',
                    };
                    match stack.pop() {
                        Some((o, _)) if o == open => {}
                        other => return Err(format!("line {n}: `{c}` closes {other:?}")),
                    }
                }
                _ => {}
            }
        }
    }
    match stack.last() {
        Some((c, n)) => Err(format!("line {n}: `{c}` is never closed")),
        None => Ok(()),
    }
}

/// A keyword in a declarator's place (after a type, before `,` `)` `=` `;`), or any reserved
/// identifier.
fn check_names(tokens: &[(usize, Tok<'_>)]) -> Result<(), String> {
    for (k, (n, t)) in tokens.iter().enumerate() {
        let Tok::Ident(name) = t else { continue };
        if is_cpp_reserved(name) {
            return Err(format!("line {n}: reserved identifier `{name}`"));
        }
        if !CPP_KEYWORDS.contains(name) || VALUE_KEYWORDS.contains(name) {
            continue;
        }
        let after_type = k > 0 && matches!(tokens[k - 1].1, Tok::Ident(_) | Tok::Punct('&' | '*' | '>'));
        let before_end = matches!(tokens.get(k + 1).map(|t| &t.1), Some(Tok::Punct(',' | ')' | '=' | ';')));
        // `const at::Tensor &` ends in `&` then `,` without a keyword; a keyword after a type is a name.
        if after_type && before_end {
            return Err(format!("line {n}: keyword `{name}` used as a name"));
        }
    }
    Ok(())
}

/// In each declared function's `( ... )`, whose comma-separated parts are declarations (two or more tokens ending in
/// a name), no name may repeat. `<...>` after a name is a template argument list.
fn check_parameter_lists<'a>(tokens: &[(usize, Tok<'a>)]) -> Result<(), String> {
    for (k, (n, t)) in tokens.iter().enumerate() {
        // Only declarations: `TYPE name(`, not calls (`f(`, `::g(`, `return h(`).
        let declares = *t == Tok::Punct('(')
            && k >= 2
            && matches!(tokens[k - 1].1, Tok::Ident(_))
            && match tokens[k - 2].1 {
                Tok::Ident(word) => !CPP_KEYWORDS.contains(&word) || ["void", "bool", "double", "int"].contains(&word),
                Tok::Punct(p) => matches!(p, '&' | '*' | '>'),
                Tok::Literal => false,
            };
        if !declares {
            continue;
        }
        let mut depth = 0i32;
        let mut angle = 0i32;
        let mut part: Vec<Tok<'a>> = Vec::new();
        let mut names: Vec<&'a str> = Vec::new();
        let mut end = |part: &mut Vec<Tok<'a>>| -> Result<(), String> {
            if part.len() >= 2
                && let Tok::Ident(name) = part[part.len() - 1].clone()
                && matches!(part[part.len() - 2], Tok::Ident(_) | Tok::Punct('&' | '*' | '>'))
            {
                if names.contains(&name) {
                    return Err(format!("line {n}: parameter `{name}` declared twice"));
                }
                names.push(name);
            }
            part.clear();
            Ok(())
        };
        for (j, (_, t)) in tokens[k + 1..].iter().enumerate() {
            match t {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') if depth > 0 => depth -= 1,
                Tok::Punct(')') => {
                    end(&mut part)?;
                    break;
                }
                Tok::Punct('<') if depth == 0 && j > 0 && matches!(tokens[k + j].1, Tok::Ident(_)) => angle += 1,
                Tok::Punct('>') if depth == 0 && angle > 0 => angle -= 1,
                Tok::Punct(',') if depth == 0 && angle == 0 => {
                    end(&mut part)?;
                    continue;
                }
                _ => {}
            }
            if depth == 0 {
                part.push(t.clone());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn catches_what_header_text_could_break() {
        assert!(
            check("int f(const at::Tensor & self, ::std::array<bool,3> mask) {\n  return g(self, \"a'b\");\n}\n")
                .is_ok()
        );
        assert!(check("// a comment with (unbalanced\nint x;\n").is_ok());
        assert!(check("int f(const at::Tensor & int) {}\n").unwrap_err().contains("keyword `int` used as a name"));
        assert!(check("int f(int64_t a, double a) {}\n").unwrap_err().contains("parameter `a` declared twice"));
        assert!(check("void g() { std::memset(&r, 0, sizeof r); }\n").is_ok());
        assert!(check("// schema with a\nTensor) -> Tensor\n").unwrap_err().contains("closes"));
        assert!(check("// ends in a backslash \\\nint x;\n").unwrap_err().contains("swallows"));
        assert!(check("auto s = \"open;\n").unwrap_err().contains("unterminated"));
        assert!(check("int __LINE__;\n").unwrap_err().contains("reserved"));
        assert!(check("x\ry\n").unwrap_err().contains("control"));
        assert!(check("/* it's\n a (block */\n#if x\nint y;\n").is_ok());
    }
}
