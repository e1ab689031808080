const Sequencer = require('@jest/test-sequencer').default;

// The order jest starts test files in. With timings in its cache (a second run in the same place) jest
// already starts the slowest first; a fresh clone has none, and jest then goes by file size, which
// puts small e2e files that start whole apps (and take tens of seconds) among the last, behind
// hundreds of unit files of a few hundred milliseconds, where they run on while the other workers
// have nothing left. Without timings: end-to-end groups and files first, then the integration groups
// (a group runs many specs, its own file a few lines long), then integration files, then unit files,
// each by size as jest would.
const LAYER = [/\.e2e-group\.ts$/, /\.e2e-spec\.ts$/, /\.int-group\.ts$/, /\.int-spec\.ts$/];
const layerOf = (path) => {
  const i = LAYER.findIndex((re) => re.test(path));
  return i === -1 ? LAYER.length : i;
};

class LayerFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.some((t) => t.duration != null)) return sorted;
    return sorted
      .map((test, i) => ({ test, i, layer: layerOf(test.path) }))
      .sort((a, b) => a.layer - b.layer || a.i - b.i)
      .map((x) => x.test);
  }
}

module.exports = LayerFirstSequencer;
