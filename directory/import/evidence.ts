/**
 * Category evidence and the rule that turns it into categories. Evidence comes from a source's
 * codes (NAICS through the map in directory/data/naics-category-map.json) or its words (a Wikidata
 * industry's label, an exhibitor list's category text, through TEXT_RULES below). A category is
 * assigned when some evidence for it is strong or medium, or when weak evidence for it comes from
 * two different sources; weak evidence alone stays in category_evidence, visible but not enough
 * to list the record under the category (the NAICS map's own note: weak mappings need further
 * evidence). Details and reasons: docs/directory-data.md.
 */
import { array, enums, object, pattern, string, validate } from 'superstruct';
import { CATEGORIES, type Category, type CategoryEvidence, EVIDENCE_STRENGTHS, type EvidenceStrength } from '../record.ts';
import { foldPhrase } from '../text.ts';
import { compareStrings, sortedUnique } from './source.ts';

export interface NaicsMapping {
  naics: string;
  title: string;
  category: Category;
  strength: EvidenceStrength;
}

const NaicsMapStruct = object({
  mappings: array(
    object({
      naics: pattern(string(), /^\d{6}$/),
      title: string(),
      category: enums(CATEGORIES),
      strength: enums(EVIDENCE_STRENGTHS),
    }),
  ),
});

/**
 * A NAICS code → category map. A 5-digit code also finds the 6-digit entry ending in 0: NAICS
 * gives a U.S. industry the code of its 5-digit industry plus 0 when the two are the same, and
 * FRS rows carry both spellings (32591 and 325910).
 */
export class NaicsMap {
  private readonly byCode = new Map<string, NaicsMapping[]>();

  constructor(mappings: readonly NaicsMapping[]) {
    for (const m of mappings) {
      const list = this.byCode.get(m.naics) ?? [];
      list.push(m);
      this.byCode.set(m.naics, list);
    }
  }

  /** Every code the map grades, once each, in code order. */
  codes(): string[] {
    return [...this.byCode.keys()].sort();
  }

  /** Parses the map's JSON (`{mappings: [{naics, title, category, strength}]}`; other members ignored). */
  static parse(text: string): NaicsMap {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new RangeError(`the NAICS map is not JSON: ${(error as Error).message}`);
    }
    const mappings = (value as { mappings?: unknown } | null)?.mappings;
    const [error, map] = validate({ mappings }, NaicsMapStruct);
    if (error) throw new RangeError(`the NAICS map is malformed at ${error.path.join('.')}: ${error.message}`);
    return new NaicsMap(map.mappings);
  }

  /** The mappings for a code as a source writes it (5 or 6 digits). */
  lookup(code: string): readonly NaicsMapping[] {
    return this.byCode.get(code) ?? (code.length === 5 ? this.byCode.get(`${code}0`) : undefined) ?? [];
  }
}

/** A phrase pattern (over folded words joined by single spaces) that suggests a category. */
export interface TextRule {
  category: Category;
  pattern: RegExp;
  strength: EvidenceStrength;
}

// Words that name the category's work outright are medium: the text is a self-description (an
// exhibitor's listing, a community-edited industry), never strong like a register's code. Words
// that name a neighbouring trade are weak.
export const TEXT_RULES: readonly TextRule[] = [
  { category: 'cnc-machining', pattern: /\b(cnc|machining|machine shops?|cnc machining)\b/, strength: 'medium' },
  { category: 'cnc-machining', pattern: /\b(milling|turning|turned parts?|precision turned)\b/, strength: 'weak' },
  { category: 'sheet-metal', pattern: /\bsheet metal\b/, strength: 'medium' },
  { category: 'sheet-metal', pattern: /\b(metal stamping|stamping|laser cutting|metal fabrication)\b/, strength: 'weak' },
  { category: 'injection-mould', pattern: /\binjection (moulding|molding|moulded|molded|mould|mold|moulds|molds)\b/, strength: 'medium' },
  { category: 'injection-mould', pattern: /\b(plastic (moulding|molding|parts|products)|mould making|mold making)\b/, strength: 'weak' },
  {
    category: 'pcba-smt',
    pattern:
      /\b(pcba|smt|surface mount|pcbs? assembly|printed circuit (boards? )?assembly|electronics manufacturing services?|electronic manufacturing services?)\b/,
    strength: 'medium',
  },
  { category: 'pcba-smt', pattern: /\b(pcbs?|printed circuit boards?)\b/, strength: 'weak' },
  { category: 'wire-harness', pattern: /\b(wire|wiring|cable) (harness|harnesses|assembly|assemblies)\b/, strength: 'medium' },
  {
    category: 'surface-finishing',
    pattern: /\b(surface (finishing|treatment)|electroplating|plating|anodi[sz]ing|powder coating|galvani[sz]ing|electropolishing)\b/,
    strength: 'medium',
  },
  { category: 'surface-finishing', pattern: /\b(coating|polishing|painting)\b/, strength: 'weak' },
  { category: 'assembly', pattern: /\b(contract manufactur(ing|er|ers)|box build|assembly services?|final assembly)\b/, strength: 'medium' },
  { category: 'assembly', pattern: /\bassembly\b/, strength: 'weak' },
  {
    category: 'inspection',
    pattern: /\b(inspection|metrology|testing laborator(y|ies)|non destructive testing|ndt|quality control)\b/,
    strength: 'medium',
  },
];

const STRENGTH_ORDER: Record<EvidenceStrength, number> = { strong: 0, medium: 1, weak: 2 };

/**
 * Evidence from free text (an industry label, a listed category): at most one entry per category,
 * the strongest rule that matched. A text that is a category slug ("sheet-metal") is medium.
 */
export function evidenceFromText(text: string, origin: { source: string; property: string; value: string }): CategoryEvidence[] {
  const phrase = foldPhrase(text);
  const found = new Map<Category, EvidenceStrength>();
  const slug = CATEGORIES.find((c) => foldPhrase(c) === phrase);
  if (slug !== undefined) found.set(slug, 'medium');
  for (const rule of TEXT_RULES) {
    if (!rule.pattern.test(phrase)) continue;
    const had = found.get(rule.category);
    if (had === undefined || STRENGTH_ORDER[rule.strength] < STRENGTH_ORDER[had]) found.set(rule.category, rule.strength);
  }
  return [...found].map(([category, strength]) => ({
    category,
    source: origin.source,
    property: origin.property,
    value: origin.value,
    label: text.trim(),
    strength,
  }));
}

/** The categories the evidence supports (see the module comment), in CATEGORIES order. */
export function assignCategories(evidence: readonly CategoryEvidence[]): Category[] {
  return CATEGORIES.filter((category) => {
    const weakSources = new Set<string>();
    for (const e of evidence) {
      if (e.category !== category) continue;
      if (e.strength !== 'weak') return true;
      weakSources.add(e.source);
    }
    return weakSources.size >= 2;
  });
}

/** Evidence in one order (category, source, property, value), duplicates removed. */
export function sortEvidence(evidence: readonly CategoryEvidence[]): CategoryEvidence[] {
  return sortedUnique(
    evidence,
    (a, b) =>
      CATEGORIES.indexOf(a.category) - CATEGORIES.indexOf(b.category) ||
      compareStrings(a.source, b.source) ||
      compareStrings(a.property, b.property) ||
      compareStrings(a.value, b.value) ||
      STRENGTH_ORDER[a.strength] - STRENGTH_ORDER[b.strength],
    (e) => `${e.category}\u0000${e.source}\u0000${e.property}\u0000${e.value}`,
  );
}
