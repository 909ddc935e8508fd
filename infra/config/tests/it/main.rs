mod files;
mod fuzz;
mod validate;
