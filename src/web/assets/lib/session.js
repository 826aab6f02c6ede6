// The token of a page, kept in sessionStorage: it survives a reload, not the closing of the tab.
/** @param {string} name */
export function tokenStore(name) {
  return {
    get: () => sessionStorage.getItem(name),
    /** @param {string} token */
    set: (token) => sessionStorage.setItem(name, token),
    clear: () => sessionStorage.removeItem(name),
  };
}

/** What a refused token means to a person. @param {{status: number, message: string}} err @param {string} hint */
export function signInMessage(err, hint) {
  if (err.status === 401) return `That token was refused (${err.message}). ${hint}`;
  if (err.status === 403) return `That token is valid but may not do this (${err.message}). ${hint}`;
  return `Could not sign in: ${err.message}`;
}

/**
 * Wires a page's sign-in form (#sign-in-form with #token, #sign-in-message) and #sign-out: a pasted
 * token (with or without "Bearer ") goes to `signIn`.
 * @param {(token: string) => Promise<void>} signIn @param {() => void} signOut
 */
export function wireSignIn(signIn, signOut) {
  const byId = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
  byId('sign-in-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const token = /** @type {HTMLTextAreaElement} */ (byId('token')).value.trim().replace(/^Bearer\s+/i, '');
    if (!token) return void (byId('sign-in-message').textContent = 'Paste a token first.');
    void signIn(token);
  });
  byId('sign-out').addEventListener('click', () => signOut());
}
