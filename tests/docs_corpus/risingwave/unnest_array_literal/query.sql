SELECT unnest(array[1,2,3,4]);
