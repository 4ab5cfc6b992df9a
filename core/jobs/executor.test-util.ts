/**
 * The executor without an engine, for tests of the market's logic: the scripted one the simulator
 * runs too (scripted-executor.ts), under the name the tests know it by.
 */
export { ScriptedExecutor as FakeExecutor } from './scripted-executor.ts';
