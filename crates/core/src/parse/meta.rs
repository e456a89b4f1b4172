//! The JSON metadata after a declaration: `{"schema": "...", "dispatch": "True", "default": "False"}`.
//!
//! serde_json does the JSON; this module adds positions (byte offsets within the JSON text)
//! so errors point at the offending column of the header line.

use std::borrow::Cow;

use serde::Deserialize;

/// Unknown keys are ignored: PyTorch may add fields.
#[derive(Deserialize)]
struct RawMeta<'a> {
    #[serde(borrow)]
    schema: Cow<'a, str>,
    #[serde(borrow)]
    dispatch: Cow<'a, str>,
    #[serde(borrow)]
    default: Cow<'a, str>,
}

#[derive(Debug)]
pub struct Meta<'a> {
    /// The schema after JSON unescaping; borrowed from the line when it has no escapes.
    pub schema: Cow<'a, str>,
    /// Byte offset within the JSON text where the schema string's contents start.
    pub schema_start: usize,
    pub dispatch: bool,
    pub default: bool,
}

#[derive(Debug)]
pub struct MetaError {
    /// Byte offset within the JSON text.
    pub offset: usize,
    pub message: String,
}

/// `json` is the rest of the line after `// `, trailing whitespace removed.
pub fn parse_meta(json: &str) -> Result<Meta<'_>, Vec<MetaError>> {
    let raw: RawMeta<'_> = serde_json::from_str(json).map_err(|e| {
        let offset = if e.line() <= 1 { e.column().saturating_sub(1) } else { json.len() };
        vec![MetaError { offset: offset.min(json.len()), message: format!("invalid metadata: {}", strip_position(&e)) }]
    })?;
    let mut errors = Vec::new();
    let mut flag = |key: &str, value: &str| match value {
        "True" => Some(true),
        "False" => Some(false),
        other => {
            errors.push(MetaError {
                offset: value_offset(json, key).unwrap_or(0),
                message: format!("\"{key}\" must be \"True\" or \"False\", found {other:?}"),
            });
            None
        }
    };
    let dispatch = flag("dispatch", &raw.dispatch);
    let default = flag("default", &raw.default);
    let (Some(dispatch), Some(default)) = (dispatch, default) else {
        return Err(errors);
    };
    let schema_start = match &raw.schema {
        Cow::Borrowed(s) => s.as_ptr() as usize - json.as_ptr() as usize,
        Cow::Owned(_) => value_offset(json, "schema").map_or(0, |o| o + 1),
    };
    Ok(Meta { schema: raw.schema, schema_start, dispatch, default })
}

/// serde_json appends " at line L column C"; the caller reports the position itself.
fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(k) => s[..k].to_owned(),
        None => s,
    }
}

/// Offset of the value of top-level `"key":` (its first character), found textually.
fn value_offset(json: &str, key: &str) -> Option<usize> {
    let quoted = format!("\"{key}\"");
    let k = json.find(&quoted)? + quoted.len();
    let rest = json[k..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    Some(json.len() - rest.len())
}

/// Maps a byte offset in an unescaped JSON string to the offset in its raw (escaped) text.
/// A `\uXXXX` escape stands for as many bytes as its character has in UTF-8 (a surrogate pair,
/// twelve raw bytes, for four).
pub fn raw_offset(raw: &str, unescaped: usize) -> usize {
    let bytes = raw.as_bytes();
    let unit = |at: usize| raw.get(at..at + 4).and_then(|h| u32::from_str_radix(h, 16).ok());
    let (mut r, mut u) = (0, 0);
    while u < unescaped && r < bytes.len() {
        if bytes[r] != b'\\' {
            r += 1;
            u += 1;
        } else if bytes.get(r + 1) != Some(&b'u') {
            r += 2;
            u += 1;
        } else {
            let low =
                || raw.get(r + 6..r + 8) == Some("\\u") && unit(r + 8).is_some_and(|c| (0xDC00..0xE000).contains(&c));
            match unit(r + 2) {
                Some(0xD800..0xDC00) if low() => {
                    r += 12;
                    u += 4;
                }
                Some(c) => {
                    r += 6;
                    u += char::from_u32(c).map_or(3, char::len_utf8);
                }
                None => {
                    r += 6;
                    u += 1;
                }
            }
        }
    }
    r.min(raw.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_ignored_and_escapes_located() {
        let json = r#"{"schema": "aten::f(str a=\"x\") -> Tensor", "dispatch": "True", "default": "False", "python_module": "nn"}"#;
        let m = parse_meta(json).unwrap();
        assert_eq!(m.schema, r#"aten::f(str a="x") -> Tensor"#);
        assert!(m.dispatch && !m.default);
        assert_eq!(&json[m.schema_start..m.schema_start + 6], "aten::");
        let quote = m.schema.find('"').unwrap();
        assert_eq!(&json[m.schema_start + raw_offset(&json[m.schema_start..], quote)..][..2], "\\\"");
    }

    #[test]
    fn unicode_escapes_are_located_by_their_utf8_length() {
        // "é" (2 bytes), "€" (3) and "😀" (a surrogate pair, 4), each escaped, then `x`.
        let raw = r"a\u00e9\u20ac\ud83d\ude00x";
        let unescaped = "aé€😀x";
        let x = unescaped.find('x').unwrap();
        assert_eq!(&raw[raw_offset(raw, x)..], "x");
        assert_eq!(&raw[raw_offset(raw, 1)..][..6], r"\u00e9");
    }

    #[test]
    fn bad_flags_and_missing_keys() {
        let json = r#"{"schema": "aten::f() -> ()", "dispatch": "Yes", "default": "False"}"#;
        let e = parse_meta(json).unwrap_err();
        assert_eq!(&json[e[0].offset..][..5], "\"Yes\"");
        let e = parse_meta(r#"{"schema": "aten::f() -> ()", "default": "False"}"#).unwrap_err();
        assert_eq!(e[0].message, "invalid metadata: missing field `dispatch`");
    }
}
