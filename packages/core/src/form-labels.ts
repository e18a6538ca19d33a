import type { ClaimFormName } from "./table.js";

/** Each claim form's name as messages, logs and test titles write it. */
export const formLabels: Readonly<Record<ClaimFormName, string>> = Object.freeze({
  rowLock: "row lock",
  lease: "lease",
  advisory: "advisory lock",
});
