/**
 * A benchmark's goals: each a title that names the figure and its threshold, whether this run met
 * it, and the figures that say so. Every benchmark judges its own goals and prints them here.
 */

export interface Goal {
  readonly title: string;
  /** null when this run did not measure what the goal needs. */
  readonly met: boolean | null;
  readonly detail: string;
}

/** A goal this run could not judge. */
export function unmeasured(title: string, detail = 'not measured in this run'): Goal {
  return { title, met: null, detail };
}

/** How a goal's state is written: met, missed, or not measured. */
export interface GoalMarks {
  readonly met: string;
  readonly missed: string;
  readonly unmeasured: string;
}

/** The marks of the goal lists in bench/RESULTS.md. */
export const GOAL_MARKS: GoalMarks = { met: '✅ met', missed: '❌ missed', unmeasured: '– n/a' };

const CONSOLE_MARKS: GoalMarks = { met: 'met ', missed: 'MISS', unmeasured: 'n/a ' };

export function goalMark(goal: Goal, marks: GoalMarks = GOAL_MARKS): string {
  return goal.met === null ? marks.unmeasured : goal.met ? marks.met : marks.missed;
}

/** The goals as a numbered Markdown list, each marked met, missed or not measured. */
export function goalList(goals: readonly Goal[], marks: GoalMarks = GOAL_MARKS): string {
  return goals.map((g, i) => `${i + 1}. ${goalMark(g, marks)}: ${g.title}. ${g.detail}.`).join('\n');
}

/** Prints the goals for the terminal, one line each, under a heading. */
export function printGoals(goals: readonly Goal[], log: (text: string) => void): void {
  log('\n== goals');
  for (const goal of goals) log(`  ${goalMark(goal, CONSOLE_MARKS)} ${goal.title}: ${goal.detail}`);
}
