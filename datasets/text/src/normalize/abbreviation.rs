//! Abbreviations and what they are read as.

/// Abbreviations written with a final period, and what they are read as.
/// `true` marks those that may also end a sentence.
pub(super) const ABBREVIATIONS: &[(&str, &str, bool)] = &[
    ("mr", "mister", false),
    ("mrs", "missus", false),
    ("ms", "miz", false),
    ("dr", "doctor", false),
    ("st", "saint", false), // or "street" (Scanner::scan_word)
    ("mt", "mount", false),
    ("prof", "professor", false),
    ("rev", "reverend", false),
    ("gen", "general", false),
    ("col", "colonel", false),
    ("maj", "major", false),
    ("capt", "captain", false),
    ("lt", "lieutenant", false),
    ("sgt", "sergeant", false),
    ("hon", "honorable", false),
    ("vs", "versus", false),
    ("approx", "approximately", false),
    ("dept", "department", false),
    ("no", "number", false),
    ("ave", "avenue", true),
    ("blvd", "boulevard", true),
    ("rd", "road", true),
    ("jr", "junior", true),
    ("sr", "senior", true),
    ("esq", "esquire", true),
    ("co", "company", true),
    ("corp", "corporation", true),
    ("inc", "incorporated", true),
    ("ltd", "limited", true),
    ("ft", "feet", true),
    ("etc", "et cetera", true),
];

/// Dotted abbreviations matched as written (case-insensitive): their words,
/// or `None` to spell their letters ([`Token::Letters`]).
pub(super) const DOTTED: &[(&str, Option<&str>)] =
    &[("e.g.", Some("for example")), ("i.e.", Some("that is")), ("ph.d.", None), ("a.m.", None), ("p.m.", None)];
