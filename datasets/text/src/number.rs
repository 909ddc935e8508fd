//! Numbers to English words: cardinals, ordinals and years, in the plain
//! style of read speech ("one hundred twenty three", no "and").

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
const SCALES: [(u64, &str); 6] = [
    (1_000_000_000_000_000_000, "quintillion"),
    (1_000_000_000_000_000, "quadrillion"),
    (1_000_000_000_000, "trillion"),
    (1_000_000_000, "billion"),
    (1_000_000, "million"),
    (1_000, "thousand"),
];

fn below_thousand(n: u64, out: &mut Vec<&'static str>) {
    debug_assert!(n < 1000);
    let (h, rest) = (n / 100, n % 100);
    if h > 0 {
        out.push(ONES[h as usize]);
        out.push("hundred");
    }
    if rest >= 20 {
        out.push(TENS[(rest / 10) as usize]);
        if rest % 10 > 0 {
            out.push(ONES[(rest % 10) as usize]);
        }
    } else if rest > 0 || h == 0 {
        out.push(ONES[rest as usize]);
    }
}

/// A cardinal number in words: `123` → `one hundred twenty three`.
pub fn cardinal(n: u64) -> String {
    if n == 0 {
        return "zero".to_string();
    }
    let mut words = Vec::new();
    let mut rest = n;
    for (value, name) in SCALES {
        if rest >= value {
            below_thousand(rest / value, &mut words);
            words.push(name);
            rest %= value;
        }
    }
    if rest > 0 {
        below_thousand(rest, &mut words);
    }
    words.join(" ")
}

/// An ordinal number in words: `21` → `twenty first`, `100` → `one hundredth`.
pub fn ordinal(n: u64) -> String {
    let words = cardinal(n);
    let (head, last) = match words.rsplit_once(' ') {
        Some((h, l)) => (format!("{h} "), l.to_string()),
        None => (String::new(), words),
    };
    let last = match last.as_str() {
        "one" => "first".to_string(),
        "two" => "second".to_string(),
        "three" => "third".to_string(),
        "five" => "fifth".to_string(),
        "eight" => "eighth".to_string(),
        "nine" => "ninth".to_string(),
        "twelve" => "twelfth".to_string(),
        w if w.ends_with('y') => format!("{}ieth", &w[..w.len() - 1]),
        w => format!("{w}th"),
    };
    format!("{head}{last}")
}

/// A year as read aloud: `1999` → `nineteen ninety nine`, `1905` →
/// `nineteen oh five`, `1900` → `nineteen hundred`, `2000` → `two thousand`,
/// `2007` → `two thousand seven`, `2019` → `twenty nineteen`. Numbers outside
/// `1000..=2999` are read as cardinals.
pub fn year(n: u64) -> String {
    if !(1000..=2999).contains(&n) {
        return cardinal(n);
    }
    let (hi, lo) = (n / 100, n % 100);
    if (2000..2010).contains(&n) {
        return cardinal(n);
    }
    if lo == 0 {
        return if hi % 10 == 0 { cardinal(n) } else { format!("{} hundred", cardinal(hi)) };
    }
    if lo < 10 {
        return format!("{} oh {}", cardinal(hi), cardinal(lo));
    }
    format!("{} {}", cardinal(hi), cardinal(lo))
}

/// Each digit as a word: `"14"` → `one four`, for the part after a decimal
/// point. Non-digits are skipped.
pub(crate) fn digits(s: &str) -> String {
    s.chars().filter_map(|c| c.to_digit(10)).map(|d| ONES[d as usize]).collect::<Vec<_>>().join(" ")
}
