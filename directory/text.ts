/**
 * How the directory compares text: case- and accent-insensitively, word by word. The same folding
 * applies to the indexed records and to queries, so "Sao Paulo", "SÃO PAULO" and "são-paulo"
 * are one city and "Müller" finds "MULLER".
 */

// Letters that NFKD does not split into a base letter and a mark, folded the way a reader who
// types without them would write them.
const EXTRA_FOLDS: Record<string, string> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ł: 'l',
  ı: 'i',
};
const EXTRA_FOLD_PATTERN = /[ßæœøđðþłı]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the range is all of ASCII, control characters too.
const ASCII = /^[\x00-\x7f]*$/;

/**
 * Lower case without accents: NFKD (which also maps full-width and other compatibility forms),
 * marks removed, NFC again (so Hangul syllables, which NFKD splits into jamo, come back whole),
 * then the few letters above.
 */
export function foldText(text: string): string {
  if (ASCII.test(text)) return text.toLowerCase();
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .normalize('NFC')
    .toLowerCase()
    .replace(EXTRA_FOLD_PATTERN, (ch) => EXTRA_FOLDS[ch] ?? ch);
}

// Scripts written without spaces between words: each character is a word of its own, so a query
// of two Han characters finds every name holding both.
const CJK = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}';
const WORD = new RegExp(`[${CJK}]|(?:(?![${CJK}])[\\p{L}\\p{N}])+`, 'gu');
const ASCII_WORD = /[a-z0-9]+/g;

/** The words of `text` after folding, in order: runs of letters and digits; punctuation separates. */
export function words(text: string): string[] {
  const folded = foldText(text);
  return folded.match(ASCII.test(folded) ? ASCII_WORD : WORD) ?? [];
}

/** A name or city in the form filters and exact matches compare: its words joined by one space. */
export function foldPhrase(text: string): string {
  return words(text).join(' ');
}
