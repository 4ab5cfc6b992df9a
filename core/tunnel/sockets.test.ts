import { socketsCompliance } from '../../test/sockets-compliance.ts';
import { MemorySockets } from './sockets.test-util.ts';

socketsCompliance('MemorySockets', new MemorySockets());
