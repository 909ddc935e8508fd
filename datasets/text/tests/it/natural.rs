//! Natural text: dates, times, currency, units, links, acronyms, and a
//! table of real-world sentences as users type them.

use dv_text::{normalize, Pause, Token};
use dv_util::SplitMix64;

/// (input, expected normalized text), one group per rule of the module docs.
const RULES: &[(&str, &str)] = &[
    // dates
    ("Jan 5, 2024", "january fifth twenty twenty four"),
    ("on January 5th, 2024.", "on january fifth twenty twenty four."),
    ("5 January 2024", "the fifth of january twenty twenty four"),
    ("on 21st March", "on the twenty first of march"),
    ("2024-01-05", "january fifth twenty twenty four"),
    ("1/5/2024", "january fifth twenty twenty four"),
    ("12/25/99", "december twenty fifth ninety nine"),
    ("Sept. 11", "september eleventh"),
    ("in March 2020", "in march twenty twenty"),
    ("Mon. Jan. 5", "monday january fifth"),
    ("See you Fri. Bring food.", "see you friday. bring food."),
    ("Jan Smith", "jan smith"),
    ("Mon-Fri", "monday to friday"),
    ("St. Paul lives on Main St. in town", "saint paul lives on main street in town"),
    ("we march 5 miles", "we march five miles"),
    ("it may be", "it may be"),
    // times
    ("3:30 pm", "three thirty p m"),
    ("3:30 p.m.", "three thirty p m."),
    ("at 3:30PM.", "at three thirty p m."),
    ("15:45", "fifteen forty five"),
    ("7 am", "seven a m"),
    ("at 7 a.m. Then we ate.", "at seven a m. then we ate."),
    ("3:05", "three oh five"),
    ("3:00", "three o'clock"),
    ("3:00 pm", "three p m"),
    ("15:00", "fifteen hundred"),
    ("I am 7", "i am seven"),
    // currency
    ("€5", "five euros"),
    ("£2.99", "two pounds ninety nine pence"),
    ("$5M", "five million dollars"),
    ("€2.5bn", "two point five billion euros"),
    ("-$5", "minus five dollars"),
    ("$10-20", "ten dollars to twenty"),
    // numbers
    ("-3.5", "minus three point five"),
    ("1,000,000,000", "one billion"),
    ("#1", "number one"),
    ("the 3rd", "the third"),
    ("1/2", "one half"),
    ("3/4 cup", "three quarters cup"),
    ("2/3", "two thirds"),
    ("1/10", "one tenth"),
    ("2 1/2 cups", "two and one half cups"),
    ("24/7", "twenty four seven"),
    ("10-20", "ten to twenty"),
    ("pages 10-20.", "pages ten to twenty."),
    ("1990-1995", "nineteen ninety to nineteen ninety five"),
    ("the 80s", "the eighties"),
    ("agent 007", "agent zero zero seven"),
    ("555-1234", "five five five, one two three four"),
    ("555-123-4567", "five five five, one two three, four five six seven"),
    ("1-800-555-1234", "one, eight zero zero, five five five, one two three four"),
    ("(555) 123-4567", "five five five, one two three, four five six seven"),
    ("555.123.4567", "five five five, one two three, four five six seven"),
    ("123.4567", "one hundred twenty three point four five six seven"),
    ("version 1.2.3", "version one point two point three"),
    ("123-45-6789", "one two three, four five, six seven eight nine"),
    ("on 3/15", "on march fifteenth"),
    ("1/16 inch", "one sixteenth inch"),
    ("a 16:9 screen", "a sixteen to nine screen"),
    ("6 ft 2 in tall", "six feet two inches tall"),
    ("2 in the box", "two in the box"),
    ("COVID-19", "covid nineteen"),
    // units
    ("5 km", "five kilometers"),
    ("1 km", "one kilometer"),
    ("1.5 km", "one point five kilometers"),
    ("10 kg", "ten kilograms"),
    ("3 ft", "three feet"),
    ("1 ft", "one foot"),
    ("100 mph", "one hundred miles per hour"),
    ("20°C", "twenty degrees celsius"),
    ("-5 °F", "minus five degrees fahrenheit"),
    ("90° angle", "ninety degrees angle"),
    ("16GB", "sixteen gigabytes"),
    ("500 ml", "five hundred milliliters"),
    ("5 kilometers", "five kilometers"),
    ("a 5-km race", "a five kilometer race"),
    ("1.5M people", "one point five million people"),
    ("5M users and 2.5B views", "five million users and two point five billion views"),
    ("Apt 4B.", "apt four b."),
    ("-0.5", "minus zero point five"),
    ("5 mins", "five mins"),
    ("$1.99/lb", "one dollar ninety nine cents per pound"),
    ("27.8 m/s", "twenty seven point eight meters per second"),
    ("100 km/h", "one hundred kilometers per hour"),
    ("5 EUR", "five euros"),
    // links and e-mail
    ("https://example.com/path", "example dot com slash path"),
    ("Visit https://example.com or mail bob@example.org", "visit example dot com or mail bob at example dot org"),
    ("www.bbc.co.uk/news/", "b b c dot co dot u k slash news"),
    ("Go to example.com.", "go to example dot com."),
    ("john.smith@mit.edu", "john dot smith at mit dot e d u"),
    ("http://foo-bar.org/a_b?q=1", "foo dash bar dot org slash a underscore b question mark q equals one"),
    ("Node.js is fast.", "node dot js is fast."),
    ("It ended.Next one.", "it ended. next one."),
    ("me@home", "me at home"),
    ("see docs.rs/tokio.", "see docs dot r s slash tokio."),
    ("http://localhost:8080/api/v1", "localhost colon eight zero eight zero slash api slash v one"),
    // acronyms
    ("The NASA and FBI.", "the nasa and f b i."),
    ("NATO and UNICEF", "nato and unicef"),
    ("the US and the UK", "the u s and the u k"),
    ("a PhD in the U.S.", "a p h d in the u s."),
    ("the U.S. Army", "the u s army"),
    ("a Ph.D. student", "a p h d student"),
    ("IBM and CNN", "i b m and c n n"),
    ("the CIA", "the c i a"),
    ("AIDS and ASAP", "aids and asap"),
    ("I like TV", "i like t v"),
    ("HELLO WORLD", "hello world"),
    ("WATCH TV NOW", "watch t v now"),
    ("iOS apps", "i o s apps"),
    ("World War II", "world war two"),
    ("Henry VIII and Louis XIV", "henry the eighth and louis the fourteenth"),
    ("Chapter XL", "chapter forty"),
    ("the IIII and VX", "the i i i i and v x"),
    ("I went", "i went"),
];

fn check(cases: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for (input, want) in cases {
        let got = normalize(input).text();
        if got != *want {
            failures.push(format!("{input:?}\n   got  {got:?}\n   want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn natural_text_rules() {
    check(RULES);
}

/// Real-world inputs: news, instructions, addresses, prices, dates, times,
/// links, e-mail, acronyms.
const REAL_WORLD: &[(&str, &str)] = &[
    (
        "Dr. Smith paid $3.50 on Jan 5, 2024 at 3:30 pm.",
        "doctor smith paid three dollars fifty cents on january fifth twenty twenty four at three thirty p m.",
    ),
    (
        "The S&P 500 fell 2.3% on Monday, its worst day since March 2020.",
        "the s and p five hundred fell two point three percent on monday, its worst day since march twenty twenty.",
    ),
    (
        "NASA will launch the probe on 12 May 2025.",
        "nasa will launch the probe on the twelfth of may twenty twenty five.",
    ),
    ("The FBI arrested 3 suspects.", "the f b i arrested three suspects."),
    (
        "Preheat the oven to 180°C for 25 min.",
        "preheat the oven to one hundred eighty degrees celsius for twenty five minutes.",
    ),
    ("Add 1/2 cup of sugar and 2 tbsp of butter.", "add one half cup of sugar and two tablespoons of butter."),
    ("Take 2 tablets every 4-6 hours.", "take two tablets every four to six hours."),
    ("Turn left on Main St. and drive 2 mi.", "turn left on main street and drive two miles."),
    ("221B Baker St., London", "two hundred twenty one b baker street, london"),
    (
        "1600 Pennsylvania Ave. NW, Washington, DC 20500",
        "sixteen hundred pennsylvania avenue n w, washington, d c twenty thousand five hundred",
    ),
    ("Call us at (555) 123-4567.", "call us at five five five, one two three, four five six seven."),
    ("Call 1-800-555-1234 today!", "call one, eight zero zero, five five five, one two three four today."),
    ("Tickets cost £12.50 each.", "tickets cost twelve pounds fifty pence each."),
    ("The car costs $24,999.", "the car costs twenty four thousand nine hundred ninety nine dollars."),
    ("A €1.2 billion deal.", "a one point two billion euros deal."),
    ("Shares rose 15% to $120.75.", "shares rose fifteen percent to one hundred twenty dollars seventy five cents."),
    ("The meeting is at 10:00 a.m. on Tue. Mar. 4.", "the meeting is at ten a m on tuesday march fourth."),
    ("Doors open at 7 pm.", "doors open at seven p m."),
    ("The train leaves at 15:45.", "the train leaves at fifteen forty five."),
    ("Submit by 2024-03-15.", "submit by march fifteenth twenty twenty four."),
    ("Born 7/4/1976 in Ohio.", "born july fourth nineteen seventy six in ohio."),
    ("Visit www.example.com for details.", "visit example dot com for details."),
    (
        "Read more at https://news.example.org/2024/story.",
        "read more at news dot example dot org slash two thousand twenty four slash story.",
    ),
    ("Email support@example.com with questions.", "email support at example dot com with questions."),
    ("Contact jane.doe@company.co.uk.", "contact jane dot doe at company dot co dot u k."),
    ("The WHO and UNICEF issued a report.", "the who and unicef issued a report."),
    ("He works for IBM in the U.S.", "he works for i b m in the u s."),
    ("She earned her PhD at MIT.", "she earned her p h d at m i t."),
    ("Mr. Jones, CEO of Acme Inc., resigned.", "mister jones, c e o of acme incorporated, resigned."),
    ("The speed limit is 65 mph.", "the speed limit is sixty five miles per hour."),
    ("It weighs 3.5 kg.", "it weighs three point five kilograms."),
    ("The 2nd and 3rd floors.", "the second and third floors."),
    ("Chapter 11, page 42.", "chapter eleven, page forty two."),
    ("Temperatures hit -10°F overnight.", "temperatures hit minus ten degrees fahrenheit overnight."),
    ("He was #1 in the 1990s.", "he was number one in the nineteen nineties."),
    ("The population is 8,000,000,000.", "the population is eight billion."),
    ("Open Mon.-Fri., 9 am to 5 pm.", "open monday to friday, nine a m to five p m."),
    ("Q3 revenue was $5.2B.", "q three revenue was five point two billion dollars."),
    ("The AI model has 7B parameters.", "the a i model has seven b parameters."),
    ("Wait... what?!", "wait. what."),
];

#[test]
fn real_world_table() {
    check(REAL_WORLD);
}

#[test]
fn acronyms_and_letters_are_tokens() {
    let n = normalize("The NASA and FBI, PhD.");
    assert_eq!(
        n.tokens,
        vec![
            Token::Word("the".into()),
            Token::Acronym("nasa".into()),
            Token::Word("and".into()),
            Token::Letters("fbi".into()),
            Token::Pause(Pause::Short),
            Token::Letters("phd".into()),
            Token::Pause(Pause::Long),
        ]
    );
    assert_eq!(n.words().collect::<Vec<_>>(), ["the", "nasa", "and", "f", "b", "i", "p", "h", "d"]);
    assert_eq!(normalize("3:30 pm").tokens.last(), Some(&Token::Letters("pm".into())));
}

#[test]
fn long_sentences_are_cut_at_a_short_pause() {
    let clause = "one two three four five six seven eight nine ten eleven twelve";
    let text = format!("{clause}, {clause}, {clause}, {clause}. Short one.");
    let n = normalize(&text);
    let sentences = n.sentences(40);
    let lens: Vec<usize> = sentences.iter().map(|s| s.iter().map(Token::spoken_words).sum()).collect();
    // 48 words: cut after the third clause (36 words), not at 40.
    assert_eq!(lens, [36, 12, 2]);
    for s in &sentences {
        assert!(!matches!(s.first(), Some(Token::Pause(_))) && !matches!(s.last(), Some(Token::Pause(_))));
        assert!(!s.contains(&Token::Pause(Pause::Long)));
    }
    // Inner short pauses are kept.
    assert_eq!(sentences[0].iter().filter(|t| **t == Token::Pause(Pause::Short)).count(), 2);
}

#[test]
fn long_sentences_without_a_pause_are_cut_at_the_limit() {
    let words: Vec<String> = (0..100).map(|_| "word".to_string()).collect();
    let n = normalize(&words.join(" "));
    let lens: Vec<usize> = n.sentences(40).iter().map(|s| s.len()).collect();
    assert_eq!(lens, [40, 40, 20]);
    // A pause too early (before a quarter of the limit) is not used.
    let text = format!("yes, {}", words[..50].join(" "));
    let lens: Vec<usize> = normalize(&text).sentences(40).iter().map(|s| s.len()).collect();
    assert_eq!(lens, [41, 11], "yes , word×39 | word×11");
    // Spelled letters count one word each: `so` and 13 × `FBI` are 40.
    let n = normalize(&format!("so {}", ["FBI"; 20].join(" ")));
    let lens: Vec<usize> = n.sentences(40).iter().map(|s| s.len()).collect();
    assert_eq!(lens, [14, 7]);
}

#[test]
fn short_text_is_one_sentence_per_period() {
    let n = normalize("Hello there. How are you? Fine!");
    let s = n.sentences(40);
    assert_eq!(s.len(), 3);
    assert_eq!(s[1], [Token::Word("how".into()), Token::Word("are".into()), Token::Word("you".into())]);
    assert!(normalize("!!! ... \u{1f600}").sentences(40).is_empty());
}

#[test]
fn any_input_gives_lowercase_words_and_merged_pauses() {
    let alphabet: Vec<char> =
        "aZ09 .,:;-/@$£€°%#&()'\"?!eE1kKmMpPsS\u{2013}\u{2212}\u{1f600}é\u{a0}:/wwwhttps".chars().collect();
    let mut rng = SplitMix64::new(0x9e3779b97f4a7c15);
    for _ in 0..3000 {
        let len = (rng.next_u64() % 40) as usize;
        let text: String = (0..len).map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize]).collect();
        let n = normalize(&text);
        for w in n.words() {
            assert!(!w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '\''), "{w:?} from {text:?}");
        }
        for t in &n.tokens {
            if let Token::Acronym(a) | Token::Letters(a) = t {
                assert!(!a.is_empty() && a.chars().all(|c| c.is_ascii_lowercase()), "{t:?} from {text:?}");
            }
        }
        assert!(!matches!(n.tokens.first(), Some(Token::Pause(_))), "{text:?}");
        assert!(n.tokens.windows(2).all(|w| !matches!(w, [Token::Pause(_), Token::Pause(_)])), "{text:?}");
        let words: usize = n.tokens.iter().map(Token::spoken_words).sum();
        let in_sentences: usize = n.sentences(10).iter().flat_map(|s| s.iter()).map(Token::spoken_words).sum();
        assert_eq!(words, in_sentences, "{text:?}: sentences lose no word");
    }
}
