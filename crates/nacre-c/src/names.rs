//! C identifiers for IR functions.
//!
//! IR function names are free-form strings; in C they become `f_<name>` with every character
//! outside `[A-Za-z0-9_]` replaced by `_`. The `f_` prefix keeps them clear of keywords, the C
//! library, the printer's own names (`vN`, `tN`, `status`, `nacre_*`) and reserved identifiers;
//! names that collide after sanitising get a numeric suffix.

use std::collections::HashSet;

/// Sanitises a function name into a C identifier (not yet made unique).
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push_str("f_");
    out.extend(name.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        }
    }));
    out
}

/// Assigns unique C identifiers to a sequence of IR function names, in order.
pub fn unique_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = HashSet::new();
    names
        .into_iter()
        .map(|name| {
            let base = sanitize(name);
            let mut candidate = base.clone();
            let mut n = 1u32;
            while !taken.insert(candidate.clone()) {
                candidate = format!("{base}_{n}");
                n += 1;
            }
            candidate
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitises_and_deduplicates() {
        let names = unique_names(["add", "a.b", "a_b", "a-b", "", "1x", "a_b_1"]);
        assert_eq!(
            names,
            [
                "f_add",
                "f_a_b",
                "f_a_b_1",
                "f_a_b_2",
                "f_",
                "f_1x",
                "f_a_b_1_1"
            ]
        );
    }

    #[test]
    fn non_ascii_becomes_underscore() {
        assert_eq!(sanitize("größe"), "f_gr__e");
    }
}
