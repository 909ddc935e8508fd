//! Text normalization: raw text as corpora and users type it, to lower-case
//! words, acronyms, spelled letters and pauses ([`Token`]).
//!
//! The rules, in the order a scanner meets them:
//!
//! * Non-ASCII letters are transliterated (`é` → `e`, curly quotes → plain,
//!   dashes → a pause, `–` between digits and `−` → `-`); other non-ASCII
//!   symbols (emoji, other scripts) are dropped.
//! * Links and e-mail addresses: `https://www.example.com/path` →
//!   `example dot com slash path`, `bob@example.org` → `bob at example dot
//!   org` (the scheme and `www.` dropped; a host needs a known top-level
//!   domain; two-letter labels, `edu` and labels without a vowel are
//!   spelled). No period inside a link or a dotted name (`node.js` →
//!   `node dot js`) ends a sentence.
//! * Currency (`$ £ € ¥` before a number): `$3.50` → `three dollars fifty
//!   cents`, `£2.99` → `two pounds ninety nine pence`, `$1.5 million` and
//!   `$1.5M` → `one point five million dollars`, `-$5` → `minus five
//!   dollars`.
//! * Dates: `Jan 5, 2024` and `January 5th 2024` → `january fifth twenty
//!   twenty four`; `5 January 2024` → `the fifth of january twenty twenty
//!   four`; `2024-01-05` (ISO) and `1/5/2024` (US: month/day/year) →
//!   `january fifth twenty twenty four`; `March 2024`. Month names and
//!   abbreviations count only capitalised (`we march 5 miles`); an
//!   abbreviation alone needs its period (`Jan.` → `january`, `Mon.` →
//!   `monday`, not `Jan Smith`).
//! * Times: `3:30` → `three thirty`, `3:05` → `three oh five`, `3:00` →
//!   `three o'clock`, `15:00` → `fifteen hundred`, `15:45` → `fifteen forty
//!   five`; `am`/`pm`/`a.m.`/`p.m.` after a time or an hour 1–12 are
//!   spelled (`7 am` → `seven a m`, `3:00 pm` → `three p m`).
//! * Numbers: `1,234` → cardinal; four-digit integers `1000..=2999` are read
//!   as years (`1999` → `nineteen ninety nine`); `3.14` → `three point one
//!   four`; `21st` → `twenty first`; `1990s` → `nineteen nineties`, `80s` →
//!   `eighties`; `50%` → `fifty percent`; `-4` → `minus four`; `1/2` →
//!   `one half`, `3/4` → `three quarters`, `2 1/2` → `two and one half`;
//!   `10-20` → `ten to twenty`; `16:9` → `sixteen to nine`; `3/15` (a day
//!   after a month 1–12) → `march fifteenth`; `007` (a leading zero) digit by digit;
//!   phone numbers (`555-1234`, `555-123-4567`, `1-800-555-1234`, `(555)
//!   123-4567`, `123-45-6789`) digit by digit with short pauses between groups; more than
//!   18 digits digit by digit; `#1` → `number one`; `1.5M` → `one point
//!   five million`, `5M` → `five million`, `2.5B` → `two point five
//!   billion` (a `B` after an integer is a letter: `221B`).
//! * Units after a number (a table of common symbols, case-sensitive): `5
//!   km` → `five kilometers`, `1 kg` → `one kilogram`, `3 ft`, `100 mph`,
//!   `20°C` → `twenty degrees celsius`, `6 ft 2 in` → `six feet two inches`, `16 GB`, `5 EUR`; a unit after `/`
//!   is `per` (`$2/lb` → `two dollars per pound`, `m/s`); after a hyphen
//!   it is singular (`a 5-km race` → `a five kilometer race`).
//! * Abbreviations with a period (`Mr.`, `Dr.`, `St.`, `e.g.`, `etc.` …) are
//!   expanded and their period is not a sentence end (except `etc.`, `Inc.`
//!   and the like when the text ends or a capital follows). Letters with
//!   periods (`U.S.`, `Ph.D.`) are spelled ([`Token::Letters`]).
//! * Capital words: acronyms of 2–6 letters become [`Token::Acronym`] (may
//!   be read as a word: `NASA`) or [`Token::Letters`] (`FBI`, `TV`, `PhD`);
//!   the rule is in the `acronym` module's docs. Roman numerals after a
//!   capitalised word are numbers: `World War II` → `world war two`,
//!   `Henry VIII` → `henry the eighth`.
//! * Punctuation becomes pauses: `, ; : ( ) --` and a spaced `-` a short
//!   pause, `. ! ?` a long one. Runs of pauses merge into the strongest;
//!   pauses before the first word are dropped.
//! * `&` → `and`, `@` → `at`, `+` → `plus`, `=` → `equals`, `°` →
//!   `degrees`; quotes and any other symbol are dropped.
//!
//! [`Normalized::sentences`] splits the result into sentences of at most
//! [`MAX_SENTENCE_WORDS`] words, at a short pause where there is one.

mod abbreviation;
mod acronym;
mod calendar;
mod link;
mod numeral;
mod phone;
mod scanner;
mod token;
mod transliterate;
mod unit;

pub use scanner::normalize;
pub use token::{Normalized, Pause, Token, MAX_SENTENCE_WORDS};
