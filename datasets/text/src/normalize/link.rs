//! Web addresses and e-mail addresses: `https://www.example.com/path` →
//! `example dot com slash path`, `bob@example.org` → `bob at example dot
//! org`.
//!
//! A link is a run of URL characters that starts with `http://`,
//! `https://` or `www.`, or whose host (before any `/`) is two or more
//! dot-separated labels ending in a known top-level domain; an e-mail
//! address is `local@host` with such a host. The scheme and a leading
//! `www.` are dropped; `. / - _ @ : ? = &` are read as `dot slash dash
//! underscore at colon question mark equals and`; a trailing `/` and
//! trailing punctuation are not part of the link (so `example.com.` ends a
//! sentence, and no period inside a link does).

use super::scanner::Scanner;
use super::token::Token;
use crate::number::{cardinal, digits};

const TOP_LEVEL_DOMAINS: &[&str] = &[
    "com", "org", "net", "edu", "gov", "mil", "int", "io", "ai", "co", "info", "biz", "app", "dev", "uk", "us", "ca",
    "de", "fr", "es", "it", "nl", "eu", "au", "in", "jp", "cn", "ru", "br", "ch", "se", "no", "ie", "nz", "tv", "me",
    "rs", "ly", "gg", "sh", "fm", "pl", "at", "be", "dk", "fi", "pt", "kr", "mx", "za", "xyz", "tech", "online",
    "site",
];

fn url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "./-_:@?=&%~+#".contains(c)
}

/// Whether `host` is dot-separated labels of letters, digits and `-`
/// ending in a known top-level domain.
fn is_host(host: &str) -> bool {
    let labels: Vec<&str> = host.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && labels.last().is_some_and(|t| TOP_LEVEL_DOMAINS.contains(&t.to_ascii_lowercase().as_str()))
}

impl Scanner {
    /// A link or e-mail address starting at `pos` (module docs): spoken,
    /// and `pos` moved past it; false, consuming nothing, otherwise.
    pub(super) fn scan_link(&mut self) -> bool {
        let mut end = self.pos;
        while self.at(end).is_some_and(url_char) {
            end += 1;
        }
        while end > self.pos && self.at(end - 1).is_some_and(|c| ".,:;?!-_/&=#".contains(c)) {
            end -= 1;
        }
        let text: String = self.chars[self.pos..end].iter().collect();
        let lower = text.to_ascii_lowercase();
        let mut body = lower.as_str();
        for scheme in ["https://", "http://", "ftp://"] {
            body = body.strip_prefix(scheme).unwrap_or(body);
        }
        let explicit = body.len() < lower.len() || body.starts_with("www.");
        body = body.strip_prefix("www.").unwrap_or(body);
        let is_link = match body.split_once('@') {
            Some((local, host)) => {
                !local.is_empty()
                    && local.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
                    && is_host(host)
            }
            None => explicit || is_host(body.split(['/', '?', ':', '#']).next().unwrap_or("")),
        };
        if !is_link || body.is_empty() {
            return false;
        }
        self.speak_link(body.to_string());
        self.pos = end;
        true
    }

    fn speak_link(&mut self, body: String) {
        let chars: Vec<char> = body.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let run = |f: fn(&char) -> bool| chars[i..].iter().take_while(|c| f(c)).collect::<String>();
            if c.is_ascii_alphabetic() {
                let label = run(char::is_ascii_alphabetic);
                i += label.len();
                let vowel = label.chars().any(|c| "aeiouy".contains(c));
                let spelled = (label.len() == 2 && label != "co") || label == "edu" || !vowel;
                self.tokens.push(if spelled { Token::Letters(label) } else { Token::Word(label) });
                continue;
            }
            if c.is_ascii_digit() {
                let number = run(char::is_ascii_digit);
                i += number.len();
                // A port (`:8080`), a long or zero-led number: digit by digit.
                let port = i > number.len() && chars[i - number.len() - 1] == ':';
                let as_number = !port && number.len() <= 4 && !(number.len() > 1 && number.starts_with('0'));
                self.words(&if as_number { cardinal(number.parse().unwrap_or(0)) } else { digits(&number) });
                continue;
            }
            let last = i + 1 == chars.len();
            let word = match c {
                '.' => "dot",
                '/' if !last => "slash",
                '-' => "dash",
                '_' => "underscore",
                '@' => "at",
                ':' => "colon",
                '?' => "question mark",
                '=' => "equals",
                '&' => "and",
                '~' => "tilde",
                '+' => "plus",
                '#' => "hash",
                '%' => "percent",
                _ => "",
            };
            self.words(word);
            i += 1;
        }
    }
}
