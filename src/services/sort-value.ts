import type { SortField } from "../store/store.js";

/** The fields every listed record has, by which Lists can be ordered. */
export interface Sortable {
  uid: string;
  name: string;
  createTime: number;
  updateTime: number;
}

/** The value of a record for a sort field, for building the next page's cursor. */
export function sortValueOf(item: Sortable, field: SortField): string | number {
  switch (field) {
    case "name":
      return item.name;
    case "create_time":
      return item.createTime;
    case "update_time":
      return item.updateTime;
    case "uid":
      return item.uid;
  }
}
