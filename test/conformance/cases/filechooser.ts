// After puppeteer/puppeteer test/src/input.spec.ts (Apache-2.0): file inputs and the
// file chooser. Every test of that file hands a file of the machine running the
// browser to the page (uploadFile, FileChooser.accept) or waits for the chooser that
// exists to do so; pagescript refuses both, so these cases differ on purpose.
import type { Case } from '../harness.js';

const area = 'input';

export const cases: Case[] = [
  {
    area,
    name: 'Page.waitForFileChooser should work when file input is attached to DOM',
    script: `await page.setContent('<input type=file>'); const [chooser] = await Promise.all([page.waitForFileChooser(), page.click('input')]); return !!chooser;`,
  },
  {
    area,
    name: 'should upload the file',
    upstream: 'input: input should upload the file',
    path: '/input/fileupload.html',
    // Puppeteer's test uploads its assets' file-to-upload.txt; any file of the machine shows the same.
    script: `const input = await page.$('input'); await input.uploadFile('package.json'); return await page.evaluate((e) => e.files[0].name, input);`,
  },
];
