// The page's store: the one place the views share state. A module, so there is one store per page, whichever view
// imports it first; also `globalThis.translatorStore`, for the tests and the benches to read and write.
//
//   store.get(key)                 the value now (undefined: never set)
//   store.set({key: value, ...})   write; every subscriber of each key written is called with its new value
//   store.on(key, (value) => ...)  subscribe: called at once with the value now (when there is one), then on each
//                                  change; returns a function that unsubscribes
//
// Keys:
//   translation  the payload of the translation the page shows (webapp/payload.py; its `request` is the sentence and
//                decoding settings it was made with: every experiment asks the server about that, not about the
//                text box); null when there is none. Written by the translation box's carrier only.
//   tab          the id of the open tab ("attention", "head", ...): written on a click on the tab bar, and by a view
//                that opens another (the heads diagnostics write {attention: ..., tab: "attention"}).
//   attention    {kind, layer, head} that the Attention view shows; any view may write it to show a head there.
//   style        "heatmap" (the default) or "lines": how the Attention view draws a map.
//   scale        "fixed" (colours from 0 to 1, the default) or "own" (each map from 0 to its largest weight).
//   head         {kind, layer, head, query} that Inside one head shows (1-based layer and head, the query token from
//                0); the model map writes {kind, layer} (with tab: "head") to open a layer, the rest kept.
//   box          the id of the model map's open box ("decoder-feed-forward").
//   walk         {stack, position, index}: the model map's walk, the token followed and the box reached (from 0);
//                null when no walk is shown.
// A view may keep a key of its own (the positional encoding's table, asked of the server once per page:
// "positionalTable"); name it after what it holds.
// The URL keeps `tab`, `attention`, `style`, `scale`, `head`, `box` and `walk` and the shown translation's sentence and
// settings (page.js), so that a reload, the back button or a shared link shows the same view. A view takes what the
// store holds when it is mounted (the URL's, read before a tab is first drawn) before it writes its own choices.
//
// Test hooks (what a canvas drew, how long a redraw took) are set only where the page was opened for tests
// (`store.testing`: the tests set globalThis.translatorTestHooks before the page loads): `exposeForTests`.
export const store = (globalThis.translatorStore ??= (() => {
  const values = {}, listeners = {};
  const made = {
    testing: globalThis.translatorTestHooks === true,
    get: (key) => values[key],
    set: (patch) => {
      for (const [key, value] of Object.entries(patch)) {
        values[key] = value;
        for (const listener of [...(listeners[key] ?? [])]) listener(value);
      }
    },
    on: (key, listener) => {
      (listeners[key] ??= new Set()).add(listener);
      if (values[key] !== undefined) listener(values[key]);
      return () => listeners[key].delete(listener);
    },
  };
  return made;
})());

// Only where the page was opened for tests: `values` ({name: value}) put on `target` (an element), for the tests to
// read what was drawn.
export const exposeForTests = (target, hooks) => {
  if (store.testing) Object.assign(target, hooks);
};
