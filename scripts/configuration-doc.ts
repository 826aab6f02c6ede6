// Prints docs/configuration.md from the settings table of src/config.ts, so that the document
// cannot drift from the code: test/docs/configuration-doc.test.ts fails when the two differ.
import { configurationDoc } from '../src/config/configuration-doc.js';

console.log(configurationDoc());
