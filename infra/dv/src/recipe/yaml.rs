//! The manifests' YAML, written by hand from JSON values: block style,
//! strings quoted unless YAML reads them back plain as the same string,
//! multi-line strings (the pods' scripts) as literal blocks.

use std::fmt::Write as _;

use serde_json::Value;

/// `v` as YAML (block style; strings quoted unless plainly safe, scripts as literal blocks).
pub(crate) fn yaml(v: &Value) -> String {
    let mut out = String::new();
    node(&mut out, v, 0);
    out
}

fn node(out: &mut String, v: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let _ = write!(out, "{pad}{}:", key(k));
                value_after(out, v, indent);
            }
        }
        Value::Array(a) => {
            for v in a {
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        // The first key on the dash's line, the rest under it.
                        let mut inner = String::new();
                        node(&mut inner, v, indent + 2);
                        let _ = write!(out, "{pad}- {}", &inner[indent + 2..]);
                    }
                    _ => {
                        let _ = write!(out, "{pad}-");
                        value_after(out, v, indent);
                    }
                }
            }
        }
        _ => {
            let _ = writeln!(out, "{pad}{}", scalar(v, indent));
        }
    }
}

/// A value after `key:` or `-`.
fn value_after(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if m.is_empty() => out.push_str(" {}\n"),
        Value::Array(a) if a.is_empty() => out.push_str(" []\n"),
        Value::Object(_) => {
            out.push('\n');
            node(out, v, indent + 2);
        }
        Value::Array(_) => {
            out.push('\n');
            node(out, v, indent + 2);
        }
        _ => {
            let _ = writeln!(out, " {}", scalar(v, indent));
        }
    }
}

fn scalar(v: &Value, indent: usize) -> String {
    match v {
        Value::String(s) if s.contains('\n') && !s.starts_with([' ', '\t']) => {
            let chomp = if s.ends_with('\n') { "" } else { "-" };
            let pad = " ".repeat(indent + 2);
            let body: Vec<String> = s
                .trim_end_matches('\n')
                .lines()
                .map(|l| if l.is_empty() { String::new() } else { format!("{pad}{l}") })
                .collect();
            format!("|{chomp}\n{}", body.join("\n"))
        }
        Value::String(s) if plain(s) => s.clone(),
        // JSON's double-quoted strings are YAML's.
        _ => v.to_string(),
    }
}

fn key(k: &str) -> String {
    if plain(k) {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

/// A string YAML reads back as the same string without quotes.
fn plain(s: &str) -> bool {
    let reserved = ["y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"];
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && !reserved.contains(&s.to_ascii_lowercase().as_str())
        && s.parse::<f64>().is_err()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn yaml_of_nested_values() {
        let v = json!({ "a": [{ "b": 1, "c": ["x", "on", "1.5"] }, "y z"], "d": {}, "e": "line 1\nline 2\n" });
        assert_eq!(
            yaml(&v),
            "a:\n  - b: 1\n    c:\n      - x\n      - \"on\"\n      - \"1.5\"\n  - \"y z\"\nd: {}\ne: |\n  line 1\n  line 2\n"
        );
    }
}
