/**
 * Pod UIDs become folder names (`<root-dir>/pods/<uid>`, `/var/log/pods/<ns>_<name>_<uid>`). The API
 * server only ever hands out UUIDs and the static sources derive hex hashes, but a manifest may set
 * its own `metadata.uid` and a runtime's labels may say anything: a UID is used in a path only when
 * it is one plain path element.
 */

const SAFE_POD_UID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const POD_UID_RULE =
  "must be 1 to 128 characters of letters, digits, '-', '_' or '.', starting with a letter or digit";

export function isSafePodUid(uid: string): boolean {
  return SAFE_POD_UID_RE.test(uid);
}

/** The UID, or a thrown error when it cannot be one path element; for code that builds paths from it. */
export function checkedPodUid(uid: string | undefined): string {
  if (uid === undefined || !isSafePodUid(uid)) {
    throw new Error(`pod UID ${JSON.stringify(uid ?? '')} cannot be used in a path: it ${POD_UID_RULE}`);
  }
  return uid;
}
