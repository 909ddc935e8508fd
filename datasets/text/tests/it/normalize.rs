use dv_text::{cardinal, normalize, ordinal, year, Pause, Token};

/// (input, expected normalized text)
const CASES: &[(&str, &str)] = &[
    // case and plain punctuation
    ("Hello, World!", "hello, world."),
    ("  Spaces   everywhere  ", "spaces everywhere"),
    ("Wait; what: really?", "wait, what, really."),
    ("One -- two - three", "one, two, three"),
    ("A well-known fact.", "a well known fact."),
    ("(Aside) he said.", "aside, he said."),
    ("It's Bob's \"book\".", "it's bob's book."),
    ("...and then?!", "and then."),
    // cardinals
    ("I have 3 cats.", "i have three cats."),
    ("0 and 7", "zero and seven"),
    ("There were 1,234 people", "there were one thousand two hundred thirty four people"),
    ("about 1000000 stars", "about one million stars"),
    ("113 miles", "one hundred thirteen miles"),
    ("-4 degrees", "minus four degrees"),
    ("999999999999999999999 grains", "nine nine nine nine nine nine nine nine nine nine nine nine nine nine nine nine nine nine nine nine nine grains"),
    // ordinals
    ("the 1st, 2nd, 3rd and 4th", "the first, second, third and fourth"),
    ("his 21st birthday", "his twenty first birthday"),
    ("the 100th time", "the one hundredth time"),
    ("the 12th of May", "the twelfth of may"),
    // years
    ("In 1999 we left.", "in nineteen ninety nine we left."),
    ("since 2008", "since two thousand eight"),
    ("in 1905", "in nineteen oh five"),
    ("the year 1900", "the year nineteen hundred"),
    ("in 2019", "in twenty nineteen"),
    ("the 1990s", "the nineteen nineties"),
    // decimals and percent
    ("pi is 3.14", "pi is three point one four"),
    ("0.5 liters", "zero point five liters"),
    ("50% off", "fifty percent off"),
    ("12.5%", "twelve point five percent"),
    // currency
    ("It costs $3.50.", "it costs three dollars fifty cents."),
    ("$1 only", "one dollar only"),
    ("$0.01", "one cent"),
    ("£20", "twenty pounds"),
    ("€2.5", "two point five euros"),
    ("a $1.5 million deal", "a one point five million dollars deal"),
    // time
    ("at 3:30 today", "at three thirty today"),
    ("at 10:05", "at ten oh five"),
    ("at 9:00", "at nine o'clock"),
    // abbreviations
    ("Mr. Smith met Dr. Jones.", "mister smith met doctor jones."),
    ("St. Paul and Mt. Hood", "saint paul and mount hood"),
    ("apples, pears, etc.", "apples, pears, et cetera."),
    ("fruit, e.g. apples", "fruit, for example apples"),
    ("I.e. no.", "that is no."),
    ("Acme Co. is big", "acme company is big"),
    ("We sold it to Acme Co.", "we sold it to acme company."),
    ("Smith Jr. Then he left.", "smith junior. then he left."),
    ("No. 5 is here", "number five is here"),
    ("Say no. Then go.", "say no. then go."),
    ("J. Smith wrote it.", "j smith wrote it."),
    // symbols
    ("salt & pepper", "salt and pepper"),
    ("me@home", "me at home"),
    ("2+2=4", "two plus two equals four"),
    ("#1 fan", "number one fan"),
    ("a * b ~ c ^ d", "a b c d"),
    // non-ASCII
    ("Café déjà vu", "cafe deja vu"),
    ("\u{201c}Quoted\u{201d} \u{2014} said I", "quoted, said i"),
    ("naïve Zoë", "naive zoe"),
    ("日本 text", "text"),
    // degenerate
    ("", ""),
    ("!!! ...", ""),
];

#[test]
fn normalization_table() {
    let mut failures = Vec::new();
    for (input, want) in CASES {
        let got = normalize(input).text();
        if got != *want {
            failures.push(format!("{input:?}\n   got  {got:?}\n   want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}

#[test]
fn tokens_are_words_and_merged_pauses() {
    let n = normalize(", Hi!! , there .");
    assert_eq!(
        n.tokens,
        vec![
            Token::Word("hi".into()),
            Token::Pause(Pause::Long),
            Token::Word("there".into()),
            Token::Pause(Pause::Long)
        ]
    );
    assert_eq!(n.words().collect::<Vec<_>>(), vec!["hi", "there"]);
}

#[test]
fn every_word_is_lowercase_ascii() {
    for (input, _) in CASES {
        for w in normalize(input).words() {
            assert!(w.chars().all(|c| c.is_ascii_lowercase() || c == '\''), "{w:?} from {input:?}");
            assert!(!w.starts_with('\'') && !w.ends_with('\''), "{w:?} from {input:?}");
        }
    }
}

#[test]
fn number_words() {
    assert_eq!(cardinal(0), "zero");
    assert_eq!(cardinal(15), "fifteen");
    assert_eq!(cardinal(40), "forty");
    assert_eq!(cardinal(101), "one hundred one");
    assert_eq!(cardinal(1_000_001), "one million one");
    assert_eq!(cardinal(2_500_000_000), "two billion five hundred million");
    assert_eq!(cardinal(u64::MAX).split(' ').next(), Some("eighteen"));
    assert_eq!(ordinal(1), "first");
    assert_eq!(ordinal(8), "eighth");
    assert_eq!(ordinal(9), "ninth");
    assert_eq!(ordinal(20), "twentieth");
    assert_eq!(ordinal(42), "forty second");
    assert_eq!(ordinal(1000), "one thousandth");
    assert_eq!(year(1066), "ten sixty six");
    assert_eq!(year(2000), "two thousand");
    assert_eq!(year(2010), "twenty ten");
    assert_eq!(year(1800), "eighteen hundred");
    assert_eq!(year(3100), "three thousand one hundred");
}
