// The int8 file's header check and tensor table, shared with the page:
// web/checkpoint_q8.mjs.
export {
  Q8_DTYPE, Q8_LAYOUT, q8TensorTable, checkQ8Header,
} from '../../web/checkpoint_q8.mjs';
