() => {
  // The page's own plumbing: the keyboard. The views are drawn by their own scripts (webapp/views.js and one script
  // per tab, each in its view's js_on_load).

  // The keyboard: each group of choices is one Tab stop, the arrow keys move within it (WAI-ARIA's radio group and
  // tabs patterns). Gradio gives every radio of a group its own name, so the browser makes each one a Tab stop of its
  // own (37 presses from the text box to the heatmap); here, a radio group (a gr.Radio: its inputs) and the tab bar
  // (its role="tab" buttons) keep one member reachable by Tab, the checked or selected one, and the arrows choose the
  // next or previous one (a radio is clicked, a tab opened, as a mouse would).
  const groups = () => [
    ...[...document.querySelectorAll("fieldset")].map((f) => [...f.querySelectorAll('input[type="radio"]')]),
    ...[...document.querySelectorAll('[role="tablist"]')].map((t) => [...t.querySelectorAll('[role="tab"]')]),
  ].filter((members) => members.length > 1);
  const isOn = (e) => (e.type === "radio" ? e.checked : e.getAttribute("aria-selected") === "true");
  const roving = () => {
    for (const members of groups()) {
      const current = members.find((e) => e === document.activeElement) || members.find(isOn) || members[0];
      for (const e of members) {
        const tabindex = e === current ? "0" : "-1";
        if (e.getAttribute("tabindex") !== tabindex) e.setAttribute("tabindex", tabindex);
      }
    }
  };
  const STEPS = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1};
  document.addEventListener("keydown", (event) => {
    const step = STEPS[event.key];
    const e = event.target;
    if (!step || event.altKey || event.ctrlKey || event.metaKey || !e.matches?.('input[type="radio"], [role="tab"]')) {
      return;
    }
    const members = groups().find((g) => g.includes(e));
    if (!members) return;
    event.preventDefault();
    const next = members[(members.indexOf(e) + step + members.length) % members.length];
    next.click();
    next.focus();
    roving();
  }, true);

  // Observers are called once per batch of changes; roving() only writes a tabindex that differs.
  new MutationObserver(roving).observe(document.body, {childList: true, subtree: true});
  new MutationObserver(roving).observe(document.body, {subtree: true, attributes: true,
                                                       attributeFilter: ["aria-selected", "aria-checked"]});
  roving();
}
