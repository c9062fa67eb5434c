// jest's own order (failed files first, then the longest by the last run, else the largest), with the
// static checks (the checks project) first: they keep one worker busy for a minute or two, and on a
// fresh clone, with no run to go by, their small file would otherwise start last and run alone.
const Sequencer = require("@jest/test-sequencer").default;

module.exports = class ChecksFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    const isCheck = (t) => t.context.config.displayName?.name === "checks";
    return [...sorted.filter(isCheck), ...sorted.filter((t) => !isCheck(t))];
  }
};
