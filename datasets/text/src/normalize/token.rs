//! The normalizer's output: words, acronyms, spelled letters and pauses, and
//! its split into sentences of bounded length.

/// Sentences longer than this many words are split ([`Normalized::sentences`]):
/// the duration model and a streaming synthesizer never get a giant one.
pub const MAX_SENTENCE_WORDS: usize = 40;

/// A pause between words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pause {
    /// Comma, semicolon, colon, dash, parenthesis.
    Short,
    /// End of a sentence.
    Long,
}

/// One unit of normalized text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A lower-case word of `a`–`z` and inner apostrophes.
    Word(String),
    /// An all-capital word of 3–6 letters whose vowels and consonants could
    /// be read as a word (`NASA`, `NATO`, `UNICEF`), in lower case. The
    /// front end reads it as a word when its lexicon has it, and spells it
    /// letter by letter otherwise (the normalizer does not know the lexicon).
    Acronym(String),
    /// Letters spelled one by one, lower case (`FBI` → `fbi`, read
    /// `f b i`): capital words that cannot be read as words, mixed-case
    /// ones (`PhD`), dotted ones (`U.S.`), `a m`/`p m`, and letter labels of
    /// links (`uk`).
    Letters(String),
    Pause(Pause),
}

impl Token {
    /// How many spoken words the token is: a letter of [`Token::Letters`]
    /// counts as one, a pause as none.
    pub fn spoken_words(&self) -> usize {
        match self {
            Token::Word(_) | Token::Acronym(_) => 1,
            Token::Letters(l) => l.len(),
            Token::Pause(_) => 0,
        }
    }
}

/// The result of [`normalize`](crate::normalize).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Normalized {
    pub tokens: Vec<Token>,
}

impl Normalized {
    /// The words, in order, without pauses; an acronym as one word, spelled
    /// letters as one word each.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().flat_map(|t| match t {
            Token::Word(w) | Token::Acronym(w) => vec![w.as_str()],
            Token::Letters(l) => (0..l.len()).filter_map(|i| l.get(i..i + 1)).collect(),
            Token::Pause(_) => Vec::new(),
        })
    }

    /// A one-line rendering: words separated by spaces (spelled letters as
    /// one-letter words), a short pause as `,` and a long pause as `.` after
    /// the word before it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let word = |out: &mut String, w: &str| {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(w);
        };
        for t in &self.tokens {
            match t {
                Token::Word(w) | Token::Acronym(w) => word(&mut out, w),
                Token::Letters(l) => (0..l.len()).filter_map(|i| l.get(i..i + 1)).for_each(|c| word(&mut out, c)),
                Token::Pause(Pause::Short) => out.push(','),
                Token::Pause(Pause::Long) => out.push('.'),
            }
        }
        out
    }

    /// The sentences: the tokens between long pauses, without them, none
    /// empty. A sentence of more than `max_words` spoken words
    /// ([`Token::spoken_words`]) is cut at its last short pause that leaves
    /// at least `max_words / 4` words before it and at most `max_words`,
    /// else after `max_words` words (a pause at the cut is dropped); the
    /// rest is split the same way. A single token longer than `max_words`
    /// (a long spelled string) stays whole.
    pub fn sentences(&self, max_words: usize) -> Vec<&[Token]> {
        let max_words = max_words.max(1);
        let mut out = Vec::new();
        for sentence in self.tokens.split(|t| *t == Token::Pause(Pause::Long)) {
            let mut rest = trim_pauses(sentence);
            while !rest.is_empty() {
                let (mut words, mut cut, mut last_pause) = (0, rest.len(), None);
                for (i, t) in rest.iter().enumerate() {
                    if *t == Token::Pause(Pause::Short) && words >= max_words / 4 {
                        last_pause = Some(i);
                    }
                    words += t.spoken_words();
                    if words > max_words && i > 0 {
                        cut = last_pause.unwrap_or(i);
                        break;
                    }
                }
                let (head, tail) = rest.split_at(cut);
                let head = trim_pauses(head);
                if !head.is_empty() {
                    out.push(head);
                }
                rest = trim_pauses(tail);
            }
        }
        out
    }
}

fn trim_pauses(mut t: &[Token]) -> &[Token] {
    while let [Token::Pause(_), rest @ ..] = t {
        t = rest;
    }
    while let [rest @ .., Token::Pause(_)] = t {
        t = rest;
    }
    t
}
