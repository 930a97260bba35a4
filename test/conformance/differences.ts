// Cases of the conformance suite whose answer under pagescript differs from
// Puppeteer's, each with its reason. The suite fails when a case differs that is
// not listed here, and when a listed case no longer differs, so this list is the
// truth about conformance; the table of docs/puppeteer-differences.md is checked
// against the cases marked `onPurpose`.
export interface Difference {
  /** Refused by design (it reaches beyond the request's own page); else a gap still to close. */
  readonly onPurpose: boolean;
  readonly reason: string;
}

export const KNOWN_DIFFERENCES: Record<string, Difference> = {
  'page: Page.Events.Close is not for scripts: close() refused': {
    onPurpose: true,
    reason:
      'page.close() is refused: the page belongs to the request, and closing it would end the request; the service closes it.',
  },
  'mouse: mouse.drag': {
    onPurpose: true,
    reason:
      'page.setDragInterception() and the drag methods are refused: drag data can name files on the server, which Chromium would read into the page.',
  },
  'mouse: should reset properly': {
    onPurpose: true,
    reason:
      'The middle mouse button is refused: on Linux a middle click pastes the selection clipboard, which every request shares.',
  },
  'click: should fire aux event on middle click': {
    onPurpose: true,
    reason:
      'The middle mouse button is refused: on Linux a middle click pastes the selection clipboard, which every request shares.',
  },
  'keyboard: should trigger commands of keyboard shortcuts': {
    onPurpose: true,
    reason:
      'The clipboard commands of keyboard shortcuts (Copy, Paste, Cut) are refused: the clipboard is shared by every request of the machine.',
  },
  'input: Page.waitForFileChooser should work when file input is attached to DOM': {
    onPurpose: true,
    reason:
      'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: should upload the file': {
    onPurpose: true,
    reason: 'elementHandle.uploadFile() is refused: it would read files from the server into the page.',
  },
  'network: response.remoteAddress': {
    onPurpose: true,
    reason:
      'The address Chromium connected to is the egress guard on loopback; showing it would tell nothing true about the site.',
  },
  'network: Response.remoteAddress should support redirects': {
    onPurpose: true,
    reason:
      "response.remoteAddress() is refused, a redirect's response too: the address Chromium connected to is the egress guard on loopback.",
  },
  'network: response.securityDetails is null for http': {
    onPurpose: true,
    reason: 'Chromium talks to the egress guard, which tunnels TLS; the answer is refused rather than misleading.',
  },
};
